#!/usr/bin/env bash
# Fetch the JVM jars the stack needs from Maven Central (via Maven, cache in ~/.m2):
#
#   .cache/jars/kafka/        Apache Kafka 4.3.1 broker (KRaft) + kafka-tools + log4j2 binding
#                             -> java -cp '.cache/jars/kafka/*' kafka.Kafka ...   (scripts/kafka.sh)
#   .cache/jars/spark-kafka/  spark-sql-kafka-0-10_2.13 at the pyspark version plus ONLY those of its
#                             runtime dependencies pyspark's own jars/ folder lacks
#                             -> spark-submit --jars "$(scripts/fetch-jars.sh --print-spark-jars)"
#   .cache/jars/sluice-spark/ Sluice's own Spark functions (the Maven module spark/: fast VARIANT
#                             reads, the event-pattern filter), built by `mvn verify` (JUnit tests and
#                             format check included) against the pyspark version's Spark artifacts;
#                             given to drivers with the connector jars
#   .cache/jars/connect-mirror/ Kafka Connect's MirrorMaker 2 (connect-mirror + connect-runtime and
#                             their runtime deps + log4j2 binding) at the broker's Kafka version, a
#                             classpath of its own; for `make bench` (bench/mirror.py) and the MM2
#                             migration test (tests/integration/test_mirrormaker2.py)
#                             -> java -cp '.cache/jars/connect-mirror/*' org.apache.kafka.connect.mirror.MirrorMaker
#   .cache/jars/bench-peers/  the data-plane benchmark's peers (the Maven module bench/peers/: the
#                             bench channel's work in Flink 2.2.1 and in Kafka Streams 4.3.1), built
#                             by `mvn verify` (JUnit tests and format check included) with their
#                             runtime classpath; only for `make bench` (bench/peers.py), never part
#                             of the default targets or `all`
#                             -> java -cp '.cache/jars/bench-peers/*' io.sluice.bench.peers.FlinkPeer ...
#   .cache/keycloak/          Keycloak (org.keycloak:keycloak-quarkus-dist, the pinned version below),
#                             the OpenID Connect provider the browser tests sign in with: the archive
#                             from Maven Central checked against its pinned SHA-256, unpacked, and
#                             built once (`kc.sh build`) so that each start skips Quarkus's build
#                             -> scripts/keycloak.sh
#
# Usage: scripts/fetch-jars.sh [--force] [--no-tests] [kafka|spark-kafka|sluice-spark|connect-mirror|bench-peers|keycloak|all ...]
#        scripts/fetch-jars.sh --print-spark-jars     # fetch if needed, print comma-separated jar paths
#
# --no-tests (make run): sluice-spark is packaged without its JUnit tests and format check unless a
# verified jar is there already; the next run without it (make test) builds and verifies it again.
#
# Idempotent: each target dir holds a .stamp keyed on the POMs, this script and (spark-kafka) the
# pyspark jar listing (keycloak: on its version, checksum and build options); when it matches
# the run is instant. --force refetches (and makes Maven
# retry remote look-ups it has cached as failed).
#
# Env: MAVEN_SETTINGS   settings.xml for mvn (default scripts/jars/settings.xml: mirror * -> Central)
#      PYSPARK_JARS_DIR pyspark's jars/ folder (default: found in .venv)
#      MAVEN_OPTS       passed to Maven as usual (e.g. -Dmaven.repo.local=/some/m2)
#      MAVEN_CENTRAL    the repository Keycloak's archive is downloaded from (default Maven Central)
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

JARS_DIR="$ROOT/.cache/jars"
POM_DIR="$ROOT/scripts/jars"
SELF="$ROOT/scripts/fetch-jars.sh"
MAVEN_SETTINGS="$(abs_path "${MAVEN_SETTINGS:-scripts/jars/settings.xml}")"
# Newest spark-token-provider-kafka-0-10 whose sources are on every Central mirror we have seen;
# only used when the exact pyspark version of that module cannot be resolved (see below).
TOKEN_PROVIDER_FALLBACK_VERSION=4.0.0
# Keycloak for the sign-in tests: the version and the SHA-256 of its keycloak-quarkus-dist
# tar.gz on Maven Central (Central's own .sha1 is checked too). A new version: change both.
KEYCLOAK_VERSION=26.7.3
KEYCLOAK_SHA256=77657f30b7e90d70f727712ce1c967f430fd6a5e9f458d32d8c6df0635345f47
# Its build-time options (kc.sh build): the embedded H2 database in a file, a local cache (no
# cluster discovery on the network); scripts/keycloak.sh starts it with --optimized.
KEYCLOAK_BUILD_OPTIONS=(--db=dev-file --cache=local)
MAVEN_CENTRAL="${MAVEN_CENTRAL:-https://repo.maven.apache.org/maven2}"

FORCE=0
PRINT_SPARK_JARS=0
NO_TESTS=0
TARGETS=()
for arg in "$@"; do
  case "$arg" in
    --force|-f) FORCE=1 ;;
    --print-spark-jars) PRINT_SPARK_JARS=1 ;;
    --no-tests) NO_TESTS=1 ;;
    kafka|spark-kafka|sluice-spark|connect-mirror|bench-peers|keycloak) TARGETS+=("$arg") ;;
    all) TARGETS+=(kafka spark-kafka sluice-spark connect-mirror keycloak) ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$SELF"; exit 0 ;;
    *) die "unknown argument '$arg' (try --help)" ;;
  esac
done
if (( PRINT_SPARK_JARS )); then
  TARGETS=(spark-kafka sluice-spark)
  exec 3>&1 1>&2          # progress messages to stderr, the jar list alone to stdout
elif (( ${#TARGETS[@]} == 0 )); then
  TARGETS=(kafka spark-kafka sluice-spark connect-mirror keycloak)
fi

# ---------------------------------------------------------------------------------------------
files_key() {  # sha256 over the given files' contents (+ any extra text on stdin)
  { cat "$@"; cat; } | sha256sum | cut -c1-64
}

stamp_ok() {  # DIR KEY
  [[ -f "$1/.stamp" ]] && [[ "$(head -n1 "$1/.stamp")" == "$2" ]] && compgen -G "$1/*.jar" >/dev/null
}

up_to_date() {  # NAME TARGET_DIR KEY [NOTE]: true (and says so) when the stamp matches KEY; checked
                # again once the lock is held, so concurrent runs do the work once
  if (( ! FORCE )) && stamp_ok "$2" "$3"; then
    log "$1: up to date${4:+ $4} ($(summary "$2") in ${2#"$ROOT"/})"
    return 0
  fi
  lock_jars_dir
  if (( ! FORCE )) && stamp_ok "$2" "$3"; then
    log "$1: up to date (made by a concurrent run)"
    return 0
  fi
  return 1
}

now_ms() { local t=${EPOCHREALTIME/./}; echo $(( 10#${t:0:${#t}-3} )); }
elapsed() { local ms=$(( $(now_ms) - $1 )); printf '%d.%01ds' $((ms / 1000)) $((ms % 1000 / 100)); }

MVN_LOG=""
run_mvn() {  # run maven quietly; on failure leave its output in $MVN_LOG
  command -v mvn >/dev/null || die "mvn not found: run scripts/ensure-system.sh"
  [[ -f "$MAVEN_SETTINGS" ]] || die "MAVEN_SETTINGS file not found: $MAVEN_SETTINGS"
  local extra=()
  (( FORCE )) && extra+=(-U)
  mvn -q -B -Dstyle.color=never -s "$MAVEN_SETTINGS" "${extra[@]}" "$@" >"$MVN_LOG" 2>&1
}
show_mvn_errors() {  # [MAX_LINES]
  sed 's/\x1b\[[0-9;]*m//g' "$MVN_LOG" | grep -E '^\[(ERROR|FATAL)\]' \
    | grep -v -E 'Re-run Maven|For more information|full stack trace|Help 1\]|surefire-reports|dump files|^\[ERROR\] *$' \
    | head -n "${1:-15}" | sed 's/^/    /' >&2 || true
}

lock_jars_dir() {  # serialize concurrent runs (e.g. kafka.sh + a test fixture starting together)
  mkdir -p "$JARS_DIR"
  if command -v flock >/dev/null; then
    exec 9>"$JARS_DIR/.lock"
    flock -w 900 9 || die "timed out waiting for another fetch-jars.sh run (lock $JARS_DIR/.lock)"
  fi
}

TMP_DIRS=()
cleanup() { local d; for d in "${TMP_DIRS[@]}"; do rm -rf "$d"; done; }
trap cleanup EXIT

TMP=""
new_tmp() {  # NAME -> sets TMP to a fresh dir next to the target (same filesystem: swap = rename)
  TMP="$(mktemp -d "$JARS_DIR/.tmp-$1.XXXXXX")"
  TMP_DIRS+=("$TMP")
}

install_dir() {  # TMP_OUT TARGET_DIR: atomically replace TARGET_DIR with TMP_OUT
  local out=$1 target=$2
  rm -rf "$target.old"
  [[ -e "$target" ]] && mv "$target" "$target.old"
  mv "$out" "$target"
  rm -rf "$target.old"
}

summary() {  # DIR
  local n size
  n=$(find "$1" -maxdepth 1 -name '*.jar' | wc -l)
  size=$(du -sh "$1" | cut -f1)
  echo "$n jars, $size"
}

# ---------------------------------------------------------------------------------------------
fetch_kafka() {
  local target="$JARS_DIR/kafka" key start tmp kafka_version
  kafka_version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM_DIR/kafka.pom.xml")"
  key="$(echo "kafka" | files_key "$SELF" "$ROOT/scripts/_lib.sh" "$POM_DIR/kafka.pom.xml" "$MAVEN_SETTINGS")"
  up_to_date kafka "$target" "$key" && return
  start=$(now_ms)
  log "kafka: resolving Apache Kafka $kafka_version (kafka_2.13 + kafka-tools + log4j2) with Maven (first run downloads ~45 MB into ~/.m2) ..."
  new_tmp kafka; tmp=$TMP
  MVN_LOG="$tmp/.mvn.log"
  if ! run_mvn -f "$POM_DIR/kafka.pom.xml" dependency:copy-dependencies \
         -DincludeScope=runtime -DoutputDirectory="$tmp/out"; then
    show_mvn_errors
    die "kafka: Maven could not fetch the Kafka jars (full log: $MVN_LOG)"
  fi
  local must
  for must in "kafka_2.13-$kafka_version.jar" "kafka-tools-$kafka_version.jar" \
              "kafka-clients-$kafka_version.jar" log4j-core-*.jar log4j-slf4j-impl-*.jar; do
    compgen -G "$tmp/out/$must" >/dev/null || die "kafka: expected $must in the Maven output, not found"
  done
  { echo "$key"; echo "# kafka $kafka_version, fetched $(date -u +%FT%TZ) by scripts/fetch-jars.sh"; } >"$tmp/out/.stamp"
  install_dir "$tmp/out" "$target"
  log "kafka: done in $(elapsed "$start"): $(summary "$target") in .cache/jars/kafka"
}

# ---------------------------------------------------------------------------------------------
# MirrorMaker 2 for the data-plane benchmark and the migration test, at the same Kafka version as
# the broker (the version is kafka.pom.xml's, handed to connect-mirror.pom.xml, so the two
# cannot drift).
fetch_connect_mirror() {
  local target="$JARS_DIR/connect-mirror" key start tmp kafka_version
  kafka_version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM_DIR/kafka.pom.xml")"
  [[ -n "$kafka_version" ]] || die "connect-mirror: no <kafka.version> in kafka.pom.xml"
  key="$(echo "connect-mirror $kafka_version" | files_key "$SELF" "$ROOT/scripts/_lib.sh" \
           "$POM_DIR/kafka.pom.xml" "$POM_DIR/connect-mirror.pom.xml" "$MAVEN_SETTINGS")"
  up_to_date connect-mirror "$target" "$key" "for Kafka $kafka_version" && return
  start=$(now_ms)
  log "connect-mirror: resolving Apache Kafka $kafka_version connect-mirror (MirrorMaker 2) + connect-runtime with Maven (first run downloads ~36 MB into ~/.m2) ..."
  new_tmp connect-mirror; tmp=$TMP
  MVN_LOG="$tmp/.mvn.log"
  if ! run_mvn -f "$POM_DIR/connect-mirror.pom.xml" -Dkafka.version="$kafka_version" \
         dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/out"; then
    show_mvn_errors
    die "connect-mirror: Maven could not fetch the MirrorMaker 2 jars (full log: $MVN_LOG)"
  fi
  local must
  for must in "connect-mirror-$kafka_version.jar" "connect-mirror-client-$kafka_version.jar" \
              "connect-runtime-$kafka_version.jar" "kafka-clients-$kafka_version.jar" \
              log4j-core-*.jar log4j-slf4j-impl-*.jar; do
    compgen -G "$tmp/out/$must" >/dev/null || die "connect-mirror: expected $must in the Maven output, not found"
  done
  { echo "$key"; echo "# connect-mirror $kafka_version (MirrorMaker 2), fetched $(date -u +%FT%TZ) by scripts/fetch-jars.sh"; } >"$tmp/out/.stamp"
  install_dir "$tmp/out" "$target"
  log "connect-mirror: done in $(elapsed "$start"): $(summary "$target") in .cache/jars/connect-mirror"
}

# ---------------------------------------------------------------------------------------------
find_pyspark_jars() {
  local d
  if [[ -n "${PYSPARK_JARS_DIR:-}" ]]; then abs_path "$PYSPARK_JARS_DIR"; return; fi
  for d in "$ROOT"/.venv/lib/python3*/site-packages/pyspark/jars; do
    [[ -d "$d" ]] && { echo "$d"; return; }
  done
  if [[ -x "$ROOT/.venv/bin/python" ]]; then
    "$ROOT/.venv/bin/python" -c 'import pyspark,os;print(os.path.join(os.path.dirname(pyspark.__file__),"jars"))' 2>/dev/null && return
  fi
  return 1
}

PJ="" SV=""
find_spark() {  # TARGET -> PJ (pyspark's jars/ folder) and SV (its Spark version), or dies
  PJ="$(find_pyspark_jars)" && [[ -d "$PJ" ]] \
    || die "$1: pyspark not found (looked in .venv; set PYSPARK_JARS_DIR or install pyspark into .venv first)"
  SV="$(find "$PJ" -maxdepth 1 -name 'spark-core_2.13-*.jar' -printf '%f\n' | sed -n 's/^spark-core_2\.13-\(.*\)\.jar$/\1/p' | head -n1)"
  [[ -n "$SV" ]] || die "$1: cannot tell the Spark version: no spark-core_2.13-*.jar in $PJ"
}

python_bin() {
  if [[ -x "$ROOT/.venv/bin/python" ]]; then echo "$ROOT/.venv/bin/python"
  elif command -v python3 >/dev/null; then command -v python3
  else die "python3 not found"; fi
}

# Artifact names pyspark ships, from file names artifactId-version[-classifier].jar. A name like
# log4j-1.2-api-2.25.4 or zstd-jni-1.5.7-7 is ambiguous, so every prefix that is followed by
# "-<digit>" counts (an over-approximation that cannot hide a real artifact of ours).
declare -A PYSPARK_HAS=()
load_pyspark_artifacts() {  # DIR
  local f base part prefix
  local -a parts
  for f in "$1"/*.jar; do
    base="${f##*/}"; base="${base%.jar}"
    IFS=- read -r -a parts <<<"$base"
    prefix="${parts[0]}"
    for part in "${parts[@]:1}"; do
      if [[ "$part" == [0-9]* ]]; then PYSPARK_HAS["$prefix"]="${f##*/}"; fi
      prefix="$prefix-$part"
    done
  done
}

# Rebuild spark-token-provider-kafka-0-10 from the fallback version's sources, compiled by the Scala
# compiler pyspark ships (scala-compiler-2.13.x.jar is in pyspark/jars) against pyspark's own jars.
# The module is 6 small Scala files; spark-sql-kafka-0-10 only calls KafkaConfigUpdater,
# KafkaTokenUtil, KafkaTokenClusterConf and KafkaRedactionUtil from it. Compiling (rather than
# using the old binary) lets scalac check every reference against Spark $spark_version: the
# 4.0.0 binary, for instance, refers to LogKeys$CLUSTER_ID$, which Spark 4.1 turned into a Java
# enum constant, so its Kerberos delegation-token path would fail with NoClassDefFoundError.
build_token_provider_from_sources() {  # SPARK_VERSION PYSPARK_JARS TMP OUT_DIR KAFKA_CLIENTS_JAR
  local sv=$1 pj=$2 tmp=$3 out=$4 kc=$5 fb=$TOKEN_PROVIDER_FALLBACK_VERSION py
  MVN_LOG="$tmp/.mvn-token-sources.log"
  if ! run_mvn -f "$POM_DIR/spark-token-provider.pom.xml" dependency:copy-dependencies \
         -Dtoken.provider.version="$fb" -Dtoken.provider.classifier=sources \
         -DoutputDirectory="$tmp/token-src-jar"; then
    show_mvn_errors
    die "spark-kafka: could not fetch spark-token-provider-kafka-0-10_2.13:$fb:sources either (log: $MVN_LOG)"
  fi
  compgen -G "$pj/scala-compiler-*.jar" >/dev/null || die "spark-kafka: no scala-compiler jar in $pj"
  py="$(python_bin)"
  "$py" - "$tmp/token-src-jar/spark-token-provider-kafka-0-10_2.13-$fb-sources.jar" "$tmp/token-src" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
  mkdir -p "$tmp/token-classes"
  local -a sources
  mapfile -t sources < <(find "$tmp/token-src" -name '*.scala' | sort)
  (( ${#sources[@]} > 0 )) || die "spark-kafka: no Scala sources in the token-provider sources jar"
  log "spark-kafka:   compiling ${#sources[@]} Scala files with pyspark's scalac against Spark $sv ..."
  if ! java -Xss4m -cp "$pj/*" scala.tools.nsc.Main -usejavacp -classpath "$kc" -release 17 -nowarn \
         -d "$tmp/token-classes" "${sources[@]}" >"$tmp/scalac.log" 2>&1; then
    sed 's/^/    /' "$tmp/scalac.log" | head -n 30 >&2
    die "spark-kafka: scalac failed to rebuild spark-token-provider-kafka-0-10 $fb for Spark $sv"
  fi
  "$py" - "$tmp/token-src" "$tmp/token-classes" \
        "$out/spark-token-provider-kafka-0-10_2.13-$sv-rebuilt-from-$fb-sources.jar" "$sv" "$fb" <<'PY'
import os, sys, zipfile
src, classes, dest, sv, fb = sys.argv[1:]
manifest = ("Manifest-Version: 1.0\r\n"
            f"Implementation-Title: spark-token-provider-kafka-0-10_2.13 {fb} sources, "
            f"compiled against Spark {sv} by scripts/fetch-jars.sh\r\n\r\n")
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("META-INF/MANIFEST.MF", manifest)
    for root_dir, skip_ext in ((classes, None), (src, ".scala")):
        for d, _, files in os.walk(root_dir):
            for f in sorted(files):
                p = os.path.join(d, f)
                rel = os.path.relpath(p, root_dir)
                if rel == "META-INF/MANIFEST.MF" or rel.startswith("META-INF/maven/") \
                        or (skip_ext and f.endswith(skip_ext)):
                    continue
                z.write(p, rel)
PY
}

fetch_spark_kafka() {
  local target="$JARS_DIR/spark-kafka" pj sv key start tmp
  find_spark spark-kafka; pj=$PJ sv=$SV
  key="$( { echo "spark-kafka $sv $pj"; find "$pj" -maxdepth 1 -name '*.jar' -printf '%f\n' | sort; } \
          | files_key "$SELF" "$ROOT/scripts/_lib.sh" "$POM_DIR/spark-kafka.pom.xml" \
                      "$POM_DIR/spark-token-provider.pom.xml" "$MAVEN_SETTINGS")"
  up_to_date spark-kafka "$target" "$key" "for pyspark $sv" && return
  start=$(now_ms)
  log "spark-kafka: resolving org.apache.spark:spark-sql-kafka-0-10_2.13:$sv (matches pyspark $sv in ${pj#"$ROOT"/}) ..."
  new_tmp spark-kafka; tmp=$TMP
  mkdir -p "$tmp/out"
  MVN_LOG="$tmp/.mvn.log"
  # One Maven run: list the resolved runtime dependencies, and copy them all to a staging dir.
  if ! run_mvn -f "$POM_DIR/spark-kafka.pom.xml" -Dspark.version="$sv" \
         dependency:list -DincludeScope=runtime -DoutputFile="$tmp/deps.txt" \
         dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/all"; then
    show_mvn_errors
    die "spark-kafka: Maven could not fetch spark-sql-kafka-0-10_2.13:$sv (log: $MVN_LOG)"
  fi

  load_pyspark_artifacts "$pj"
  local line g a t c v file kept=() skipped=()
  local -a co
  while read -r line; do
    IFS=: read -r -a co <<<"${line%% *}"   # group:artifact:type[:classifier]:version:scope
    case ${#co[@]} in
      5) g=${co[0]} a=${co[1]} t=${co[2]} c=""       v=${co[3]} ;;
      6) g=${co[0]} a=${co[1]} t=${co[2]} c=${co[3]} v=${co[4]} ;;
      *) continue ;;
    esac
    file="$a-$v${c:+-$c}.$t"
    if [[ -n "${PYSPARK_HAS[$a]:-}" ]]; then
      skipped+=("$a $v (pyspark has ${PYSPARK_HAS[$a]})")
    else
      [[ -f "$tmp/all/$file" ]] || die "spark-kafka: Maven listed $g:$a:$v but did not copy $file"
      cp "$tmp/all/$file" "$tmp/out/"
      kept+=("$file")
    fi
  done < <(grep -E '^ +[^ :]+:[^ :]+:' "$tmp/deps.txt")
  (( ${#kept[@]} > 0 )) || die "spark-kafka: no dependency list produced (see $MVN_LOG)"
  log "spark-kafka:   skipped (already in pyspark/jars): ${skipped[*]/%/;}"

  # spark-token-provider-kafka-0-10, resolved on its own (spark-kafka.pom.xml excludes it).
  local kc token_mode
  kc="$(compgen -G "$tmp/out/kafka-clients-*.jar" | head -n1)" || die "spark-kafka: kafka-clients jar missing"
  MVN_LOG="$tmp/.mvn-token.log"
  if run_mvn -f "$POM_DIR/spark-token-provider.pom.xml" dependency:copy-dependencies \
       -Dtoken.provider.version="$sv" -DoutputDirectory="$tmp/out"; then
    token_mode="binary spark-token-provider-kafka-0-10_2.13-$sv.jar from Maven"
  else
    warn "spark-kafka: org.apache.spark:spark-token-provider-kafka-0-10_2.13:$sv is not on the Maven repository" \
         "(Maven says: $(sed 's/\x1b\[[0-9;]*m//g' "$MVN_LOG" | grep -m1 -o -E "Could not find artifact [^ ]+|[^ ]+ was not found in [^ ]+|Could not transfer artifact [^ ]+" || echo "resolution failed"));" \
         "rebuilding it from the $TOKEN_PROVIDER_FALLBACK_VERSION sources"
    build_token_provider_from_sources "$sv" "$pj" "$tmp" "$tmp/out" "$kc"
    token_mode="rebuilt from spark-token-provider-kafka-0-10_2.13-$TOKEN_PROVIDER_FALLBACK_VERSION-sources.jar with pyspark's scalac"
  fi

  # Belt and braces: nothing we ship may duplicate an artifact pyspark already has.
  local j base
  for j in "$tmp/out"/*.jar; do
    base="${j##*/}"
    for a in "${!PYSPARK_HAS[@]}"; do
      if [[ "$base" == "$a-"[0-9]* ]]; then
        die "spark-kafka: $base duplicates pyspark's ${PYSPARK_HAS[$a]}"
      fi
    done
  done

  { echo "$key"
    echo "# spark-sql-kafka-0-10_2.13 $sv for pyspark $sv ($pj), fetched $(date -u +%FT%TZ) by scripts/fetch-jars.sh"
    echo "# token provider: $token_mode"
  } >"$tmp/out/.stamp"
  install_dir "$tmp/out" "$target"
  log "spark-kafka: done in $(elapsed "$start"): $(summary "$target") in .cache/jars/spark-kafka:"
  find "$target" -maxdepth 1 -name '*.jar' -printf '      %f\n' | sort
}

# ---------------------------------------------------------------------------------------------
# Sluice's Spark functions: the Maven module spark/ (pom.xml) built against the Spark version
# pyspark ships: compile (-Werror), JUnit tests, google-java-format check, jar.
# The Spark version is pyproject.toml's pyspark pin (pyspark's version is Spark's): the build needs
# no venv, so `make run` builds it while the venv installs. Without pyproject.toml (the image's jar
# stage), pyspark's jars tell it (PYSPARK_JARS_DIR).
build_sluice_spark() {
  local target="$JARS_DIR/sluice-spark" module="$ROOT/spark" sv key start tmp
  local -a sources
  sv=""
  if [[ -f "$ROOT/pyproject.toml" ]]; then  # (an image's build stage may copy only spark/)
    sv="$(sed -n 's/^ *"pyspark==\([0-9][0-9.]*\)".*/\1/p' "$ROOT/pyproject.toml" | head -n1)"
  fi
  if [[ -z "$sv" ]]; then find_spark sluice-spark; sv=$SV; fi
  mapfile -t sources < <(find "$module/src" -type f | sort)
  (( ${#sources[@]} > 0 )) || die "sluice-spark: no sources in ${module#"$ROOT"/}/src"
  key="$( { echo "sluice-spark $sv"; printf '%s\n' "${sources[@]#"$module"/}"; } \
          | files_key "$SELF" "$ROOT/scripts/_lib.sh" "$module/pom.xml" "$MAVEN_SETTINGS" "${sources[@]}")"
  local wanted="$key" kind="mvn verify"
  local -a goal=(verify)
  if (( NO_TESTS )); then  # make run: a verified jar will do, else one packaged without tests
    if (( ! FORCE )) && stamp_ok "$target" "$key"; then
      log "sluice-spark: up to date for Spark $sv ($(summary "$target") in ${target#"$ROOT"/})"
      return
    fi
    wanted="$key package-only" kind="mvn package, no tests"
    goal=(package -DskipTests -Dspotless.check.skip=true)
  fi
  up_to_date sluice-spark "$target" "$wanted" "for Spark $sv" && return
  command -v javac >/dev/null || die "sluice-spark: javac not found (a Java 17 JDK is needed: scripts/ensure-system.sh)"
  start=$(now_ms)
  log "sluice-spark: building spark/ with Maven against Spark $sv ($kind; first run downloads ~90 MB into ~/.m2) ..."
  new_tmp sluice-spark; tmp=$TMP
  mkdir -p "$tmp/out"
  MVN_LOG="$JARS_DIR/sluice-spark-mvn.log"   # outside $tmp: kept for reading after a failure
  if ! run_mvn -f "$module/pom.xml" -Dspark.version="$sv" -Dsluice.build.directory="$tmp/target" "${goal[@]}"; then
    show_mvn_errors 40
    die "sluice-spark: mvn verify failed on spark/ against Spark $sv (full log: ${MVN_LOG#"$ROOT"/};" \
        "tests alone: mvn -f spark/pom.xml test; formatting: mvn -f spark/pom.xml spotless:apply)"
  fi
  rm -f "$MVN_LOG"
  [[ -f "$tmp/target/sluice-spark-functions-$sv.jar" ]] \
    || die "sluice-spark: Maven made no sluice-spark-functions-$sv.jar (full log: $MVN_LOG)"
  cp "$tmp/target/sluice-spark-functions-$sv.jar" "$tmp/out/"
  { echo "$wanted"; echo "# Sluice Spark functions for Spark $sv, built $(date -u +%FT%TZ) by scripts/fetch-jars.sh ($kind)"; } >"$tmp/out/.stamp"
  install_dir "$tmp/out" "$target"
  log "sluice-spark: done in $(elapsed "$start"): $(summary "$target") in .cache/jars/sluice-spark"
}

# ---------------------------------------------------------------------------------------------
# The benchmark's peers: the Maven module bench/peers/ (Flink and Kafka Streams doing the bench
# channel's work), built and verified, its jar beside the runtime classpath Maven copies to
# target/classpath/ (the module's own versions: Flink, the Kafka connector, Kafka Streams at the
# broker's Kafka version, Jackson, log4j2).
build_bench_peers() {
  local target="$JARS_DIR/bench-peers" module="$ROOT/bench/peers" key start tmp
  local -a sources
  mapfile -t sources < <(find "$module/src" -type f | sort)
  (( ${#sources[@]} > 0 )) || die "bench-peers: no sources in ${module#"$ROOT"/}/src"
  key="$( { echo "bench-peers"; printf '%s\n' "${sources[@]#"$module"/}"; } \
          | files_key "$SELF" "$ROOT/scripts/_lib.sh" "$module/pom.xml" "$MAVEN_SETTINGS" "${sources[@]}")"
  up_to_date bench-peers "$target" "$key" && return
  command -v javac >/dev/null || die "bench-peers: javac not found (a Java 17 JDK is needed: scripts/ensure-system.sh)"
  start=$(now_ms)
  log "bench-peers: building bench/peers/ with Maven (mvn verify; first run downloads ~160 MB into ~/.m2) ..."
  new_tmp bench-peers; tmp=$TMP
  MVN_LOG="$JARS_DIR/bench-peers-mvn.log"   # outside $tmp: kept for reading after a failure
  if ! run_mvn -f "$module/pom.xml" -Dpeers.build.directory="$tmp/target" verify; then
    show_mvn_errors 40
    die "bench-peers: mvn verify failed on bench/peers/ (full log: ${MVN_LOG#"$ROOT"/};" \
        "tests alone: mvn -f bench/peers/pom.xml test; formatting: mvn -f bench/peers/pom.xml spotless:apply)"
  fi
  rm -f "$MVN_LOG"
  local must
  for must in target/sluice-bench-peers-1.jar target/classpath/flink-runtime-*.jar \
              target/classpath/flink-connector-kafka-*.jar target/classpath/kafka-streams-*.jar \
              target/classpath/log4j-slf4j-impl-*.jar; do
    compgen -G "$tmp/$must" >/dev/null || die "bench-peers: expected $must in the Maven output, not found"
  done
  mv "$tmp/target/classpath" "$tmp/out"
  cp "$tmp/target/sluice-bench-peers-1.jar" "$tmp/out/"
  { echo "$key"; echo "# Sluice benchmark peers (Flink, Kafka Streams), built $(date -u +%FT%TZ) by scripts/fetch-jars.sh"; } >"$tmp/out/.stamp"
  install_dir "$tmp/out" "$target"
  log "bench-peers: done in $(elapsed "$start"): $(summary "$target") in .cache/jars/bench-peers"
}

# ---------------------------------------------------------------------------------------------
# Keycloak, the identity provider of the sign-in tests (scripts/keycloak.sh runs it): a
# distribution, not a Maven dependency, so the archive is fetched as it is published and
# checked against the pinned SHA-256. Unpacked into .cache/keycloak/keycloak-<version>/ and
# built there once with the build-time options above; each run gets a home of its own that
# links to it (scripts/keycloak.sh), so this copy stays as built.
fetch_keycloak() {
  local base="$ROOT/.cache/keycloak" target key start tmp url sha1
  target="$base/keycloak-$KEYCLOAK_VERSION"
  key="$(printf 'keycloak %s %s %s\n' "$KEYCLOAK_VERSION" "$KEYCLOAK_SHA256" "${KEYCLOAK_BUILD_OPTIONS[*]}" | sha256sum | cut -c1-64)"
  if (( ! FORCE )) && [[ -f "$target/.stamp" && "$(head -n1 "$target/.stamp")" == "$key" ]]; then
    log "keycloak: up to date (Keycloak $KEYCLOAK_VERSION in ${target#"$ROOT"/})"
    return
  fi
  lock_jars_dir
  if (( ! FORCE )) && [[ -f "$target/.stamp" && "$(head -n1 "$target/.stamp")" == "$key" ]]; then
    log "keycloak: up to date (made by a concurrent run)"
    return
  fi
  command -v java >/dev/null || die "keycloak: java not found (scripts/ensure-system.sh installs it)"
  start=$(now_ms)
  mkdir -p "$base"
  tmp="$(mktemp -d "$base/.tmp-keycloak.XXXXXX")"
  TMP_DIRS+=("$tmp")
  url="$MAVEN_CENTRAL/org/keycloak/keycloak-quarkus-dist/$KEYCLOAK_VERSION/keycloak-quarkus-dist-$KEYCLOAK_VERSION.tar.gz"
  log "keycloak: downloading keycloak-quarkus-dist $KEYCLOAK_VERSION (~170 MB) from ${MAVEN_CENTRAL%/maven2} ..."
  curl -fsSL --retry 3 -o "$tmp/dist.tar.gz" "$url" || die "keycloak: could not download $url"
  echo "$KEYCLOAK_SHA256  $tmp/dist.tar.gz" | sha256sum -c --quiet - \
    || die "keycloak: $url is not the archive pinned in scripts/fetch-jars.sh (SHA-256 differs)"
  sha1="$(curl -fsSL --retry 3 "$url.sha1" | cut -c1-40)" || die "keycloak: could not download $url.sha1"
  [[ "$(sha1sum "$tmp/dist.tar.gz" | cut -c1-40)" == "$sha1" ]] \
    || die "keycloak: the archive does not match Maven Central's SHA-1 for it"
  tar -xzf "$tmp/dist.tar.gz" -C "$tmp"
  rm -f "$tmp/dist.tar.gz"
  [[ -x "$tmp/keycloak-$KEYCLOAK_VERSION/bin/kc.sh" ]] || die "keycloak: no bin/kc.sh in the archive"
  log "keycloak: kc.sh build ${KEYCLOAK_BUILD_OPTIONS[*]} (once; each start skips it) ..."
  if ! "$tmp/keycloak-$KEYCLOAK_VERSION/bin/kc.sh" build "${KEYCLOAK_BUILD_OPTIONS[@]}" >"$tmp/build.log" 2>&1; then
    tail -n 30 "$tmp/build.log" | sed 's/^/    /' >&2
    die "keycloak: kc.sh build failed"
  fi
  # What the build leaves in data/ (temporary files) is no part of the distribution.
  rm -rf "$tmp/keycloak-$KEYCLOAK_VERSION/data"
  { echo "$key"
    echo "# Keycloak $KEYCLOAK_VERSION (sha256 $KEYCLOAK_SHA256), built with ${KEYCLOAK_BUILD_OPTIONS[*]} $(date -u +%FT%TZ) by scripts/fetch-jars.sh"
  } >"$tmp/keycloak-$KEYCLOAK_VERSION/.stamp"
  rm -rf "$target.old"
  [[ -e "$target" ]] && mv "$target" "$target.old"
  mv "$tmp/keycloak-$KEYCLOAK_VERSION" "$target"
  rm -rf "$target.old"
  log "keycloak: done in $(elapsed "$start"): Keycloak $KEYCLOAK_VERSION in ${target#"$ROOT"/}"
}

# ---------------------------------------------------------------------------------------------
mkdir -p "$JARS_DIR"
declare -A done_targets=()
for t in "${TARGETS[@]}"; do
  [[ -n "${done_targets[$t]:-}" ]] && continue
  done_targets[$t]=1
  case "$t" in
    kafka) fetch_kafka ;;
    spark-kafka) fetch_spark_kafka ;;
    sluice-spark) build_sluice_spark ;;
    connect-mirror) fetch_connect_mirror ;;
    bench-peers) build_bench_peers ;;
    keycloak) fetch_keycloak ;;
  esac
done

if (( PRINT_SPARK_JARS )); then
  find "$JARS_DIR/spark-kafka" "$JARS_DIR/sluice-spark" -maxdepth 1 -name '*.jar' | sort | paste -sd, - >&3
fi
