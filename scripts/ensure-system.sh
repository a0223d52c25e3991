#!/usr/bin/env bash
# Install the Debian packages the stack needs, only if something is missing:
#   redis-server              (scripts/redis.sh runs it in the foreground; the system service is
#                              kept stopped and disabled)
#   java >= 17                (openjdk-17-jre-headless: Kafka broker, Spark driver)
#   javac                     (openjdk-17-jdk-headless: Sluice's Spark functions, the Maven module spark/)
#   mvn                       (maven: scripts/fetch-jars.sh fetches the jars and builds spark/ with it)
#   victoria-metrics          (scripts/victoriametrics.sh runs it in the foreground: the channels'
#                              history; the packaged service is kept disabled)
#   chromium, chromium-driver (the end-to-end tests drive Debian's Chromium with playwright-core;
#                              no browser is ever downloaded at run time)
#   iproute2, iptables        (the fault suite, tests/faults: runtime hosts in network namespaces,
#                              partitions by dropping a namespace's traffic)
#   libfaketime               (the fault suite: a runtime host's clock skewed with LD_PRELOAD)
#   curl                      (scripts/fetch-jars.sh keycloak downloads the sign-in tests' Keycloak;
#                              scripts/keycloak.sh waits for it to answer)
# With --run (make run) only what the stack itself needs: redis-server, Java, javac, Maven and
# VictoriaMetrics; the tests' Chromium, PostgreSQL and fault-suite tools are left out.
# Fast path: when everything is present it only checks and prints one line (no apt-get).
# Needs root (or sudo) only when it has to install.
set -euo pipefail
# shellcheck source=scripts/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

for_tests=1
case "${1:-}" in
  --run) for_tests=0 ;;
  "") ;;
  *) die "unknown argument '$1' (scripts/ensure-system.sh [--run])" ;;
esac

java_major() {  # prints the major version of `java` on PATH, or nothing
  command -v java >/dev/null || return 0
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\)[."].*/\1/p' | head -n1
}

missing=()
have=()
if command -v redis-server >/dev/null; then
  have+=("redis-server $(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')")
else
  missing+=(redis-server)
fi
jv="$(java_major)"
if [[ -n "$jv" ]] && (( jv >= 17 )); then
  have+=("java $jv")
else
  [[ -n "$jv" ]] && warn "java $jv on PATH is too old (need >= 17)"
  missing+=(openjdk-17-jre-headless)
fi
if command -v javac >/dev/null; then
  have+=(javac)
else
  missing+=(openjdk-17-jdk-headless)
fi
if command -v mvn >/dev/null; then
  have+=(mvn)
else
  missing+=(maven)
fi
# VictoriaMetrics: the time-series store of the channels' history (scripts/victoriametrics.sh).
if command -v victoria-metrics >/dev/null; then
  have+=(victoria-metrics)
else
  missing+=(victoria-metrics)
fi
# Only the tests need these (not `make run`).
if (( for_tests )); then
  # Debian's Chromium: tests/e2e drive it headless through playwright-core (frontend/e2e).
  if [[ -x /usr/bin/chromium ]]; then
    have+=(chromium)
  else
    missing+=(chromium chromium-driver)
  fi
  # The fault suite (make fault-test): network namespaces, partitions and skewed clocks.
  if command -v ip >/dev/null; then have+=(iproute2); else missing+=(iproute2); fi
  if command -v iptables >/dev/null; then have+=(iptables); else missing+=(iptables); fi
  if compgen -G "/usr/lib/*/faketime/libfaketime.so.1" >/dev/null; then
    have+=(libfaketime)
  else
    missing+=(libfaketime)
  fi
  # Keycloak's download and readiness check (the sign-in tests' identity provider).
  if command -v curl >/dev/null; then have+=(curl); else missing+=(curl); fi
  # PostgreSQL server binaries: `make test` runs the console's tests on a throwaway cluster too.
  if compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
    have+=(postgresql)
  else
    missing+=(postgresql)
  fi
fi

# The unprivileged account runtime workers and Spark drivers drop to when started as root
# (SLUICE_RUNTIME_USER; scripts/run.sh uses it). Never a login account.
if (( EUID == 0 )) && ! id sluice >/dev/null 2>&1; then
  useradd --system --user-group --create-home --home-dir /var/lib/sluice \
    --shell /usr/sbin/nologin sluice
  log "created the system user sluice (runtime workers and Spark drivers run as it)"
fi

if (( ${#missing[@]} == 0 )); then
  log "system packages OK (${have[*]/%/,} nothing to install)"
  exit 0
fi

log "missing: ${missing[*]} -- installing with apt-get"
SUDO=()
if (( EUID != 0 )); then
  command -v sudo >/dev/null || die "need root to install ${missing[*]} (no sudo available)"
  SUDO=(sudo)
fi
command -v apt-get >/dev/null || die "apt-get not found: install ${missing[*]} by hand"

# Keep package post-install scripts from starting services (redis-server would otherwise start as a
# system daemon on 6379): the standard Debian policy-rc.d hook, only if none is in place already.
POLICY=/usr/sbin/policy-rc.d
policy_added=0
if [[ ! -e "$POLICY" ]]; then
  printf '#!/bin/sh\n# added by sluice scripts/ensure-system.sh during apt-get install\nexit 101\n' \
    | "${SUDO[@]}" tee "$POLICY" >/dev/null
  "${SUDO[@]}" chmod 755 "$POLICY"
  policy_added=1
fi
remove_policy() { if (( policy_added )); then "${SUDO[@]}" rm -f "$POLICY"; fi; }
trap remove_policy EXIT

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

if [[ " ${missing[*]} " == *" postgresql "* ]] && command -v systemctl >/dev/null; then
  "${SUDO[@]}" systemctl disable --now postgresql >/dev/null 2>&1 || true  # we start our own
fi
if [[ " ${missing[*]} " == *" victoria-metrics "* ]] && command -v systemctl >/dev/null; then
  "${SUDO[@]}" systemctl disable victoria-metrics >/dev/null 2>&1 || true  # we start our own
fi
if [[ " ${missing[*]} " == *" redis-server "* ]]; then
  # We run redis-server ourselves (scripts/redis.sh); keep the packaged service off.
  if command -v systemctl >/dev/null; then
    if [[ -d /run/systemd/system ]]; then
      "${SUDO[@]}" systemctl disable --now redis-server >/dev/null 2>&1 || true
    else
      "${SUDO[@]}" systemctl disable redis-server >/dev/null 2>&1 || true   # offline: drop the symlinks
    fi
  fi
  if command -v update-rc.d >/dev/null && [[ -e /etc/init.d/redis-server ]]; then
    "${SUDO[@]}" update-rc.d redis-server disable >/dev/null 2>&1 || true
    if [[ -f /run/redis/redis-server.pid ]]; then
      "${SUDO[@]}" /etc/init.d/redis-server stop >/dev/null 2>&1 || true
    fi
  fi
  log "redis-server system service disabled (scripts/redis.sh runs our own instance)"
fi

for cmd in redis-server java javac mvn; do
  command -v "$cmd" >/dev/null || die "$cmd still not on PATH after installing ${missing[*]}"
done
jv="$(java_major)"
(( jv >= 17 )) || die "java on PATH is $jv after installing openjdk-17 (check update-alternatives --config java)"
log "installed ${missing[*]}; redis-server $(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p'), java $jv, $(mvn -v 2>/dev/null | head -n1 | sed 's/\x1b\[[0-9;]*m//g')"
