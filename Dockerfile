# syntax=docker/dockerfile:1
# Switchboard: build, (optionally) test, and a small runtime image.
#
#   docker build -t switchboard .                 # runtime image
#   docker build --target test -t sb-test .       # also runs the test suite (PGlite)
#   docker run -p 8080:8080 -v sb-data:/data switchboard
#
# The build stage runs what .ci/run runs before the tests: npm ci, then
# npm run verify (gen/ is what buf generate makes, Biome, tsc, buf lint, and
# npm run build).
# Node 24 LTS, as package.json's engines (the image's node; the `node` devDependency that
# npm ci also installs in the build stage is the same version).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run verify

FROM build AS test
ENV CI=true
RUN npm test

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the postinstall applies scripts/patches/ with patch-package (a devDependency)
# to packages the build stage already bundled into dist/.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force \
 && mkdir -p /data && chown node:node /data
COPY --from=build /app/dist ./dist
COPY --from=build /app/scripts/switchboard.js ./scripts/switchboard.js
USER node
VOLUME ["/data"]
EXPOSE 8080
# Ready = listening and the database answers.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/readyz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1: the server handles SIGTERM and SIGINT itself (ends calls in
# flight, closes the database, exits 0) and starts no child processes. The
# node flags are npm start's (package.json; docs/performance.md says why).
ENTRYPOINT ["node", "--max-semi-space-size=8", "dist/server.js"]
