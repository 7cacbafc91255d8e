# syntax=docker/dockerfile:1
# opinference gateway image: a build stage that installs and builds with the same steps CI runs
# (scripts/container-build-steps.sh; CI runs it on a fresh copy of the repository), and a slim
# runtime stage with production dependencies only, running as the unprivileged `node` user.
# See docs/deployment.md.

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
# better-sqlite3 compiles from source when no prebuilt binary can be downloaded.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# npm 11 reads package.json's allowScripts (node-llama-cpp's postinstall must not run).
RUN npm install -g npm@11.19.1
WORKDIR /app
# Everything the build needs (see .dockerignore): package.json, package-lock.json, vendor/ (the
# no-GPU stand-in that package.json's overrides point at), src/, scripts/, tsconfig*.
COPY . .
RUN scripts/container-build-steps.sh build

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    OP_HOST=0.0.0.0 \
    OP_PORT=8080 \
    OP_CONFIG=/etc/opinference/opinference.yaml \
    OP_DATABASE_URL=sqlite:/app/data/opinference.db
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/vendor ./vendor
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/scripts/container-build-steps.sh ./scripts/container-build-steps.sh
# The embedded SQLite default writes under /app/data (mount a volume there); the files above
# stay owned by root, so the gateway cannot change its own code.
RUN mkdir -p /app/data /etc/opinference && chown node:node /app/data
USER node
# The runtime stage alone still runs: CLI, native module, migrations, dashboard files.
RUN scripts/container-build-steps.sh verify
EXPOSE 8080
# /ready: 503 while the database cannot be written, Redis (OP_REDIS_URL) cannot be reached or a
# local model file is missing; the gateway stops listening when it drains at SIGTERM.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.OP_PORT||8080)+'/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["serve"]
