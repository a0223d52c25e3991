# Sourced (as /usr/local/lib/sluice/ca-truststore.sh, with CaTrustStore.java beside it) by the build steps that download (docker/Dockerfile, docker/local/kafka.Dockerfile):
# when the build was given a CA bundle as the secret "ca_bundle" (a TLS-inspecting proxy's,
# see docs/cluster.md), pip, npm and Maven trust it. Without that secret nothing changes.
# The file must be a whole bundle (your system's, e.g. /etc/ssl/certs/ca-certificates.crt):
# pip uses it instead of its own, npm and Java add it to theirs.
if [ -s /run/secrets/ca_bundle ]; then
  export PIP_CERT=/run/secrets/ca_bundle
  export NODE_EXTRA_CA_CERTS=/run/secrets/ca_bundle
  if command -v java >/dev/null 2>&1; then
    java /usr/local/lib/sluice/CaTrustStore.java /run/secrets/ca_bundle /tmp/ca-truststore.p12
    export MAVEN_OPTS="${MAVEN_OPTS:-} -Djavax.net.ssl.trustStore=/tmp/ca-truststore.p12 -Djavax.net.ssl.trustStorePassword=changeit -Djavax.net.ssl.trustStoreType=PKCS12"
  fi
  echo "ca-truststore: trusting the CA bundle given as the build secret ca_bundle" >&2
fi
