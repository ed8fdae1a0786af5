# kvm2's image: the CLI (`kvm2 worker`, `kvm2 board`, …) on Node.js 24 LTS. libvirt hosts are
# reached over SSH, so nothing of libvirt is installed here: only the key and known_hosts the
# configuration names, mounted at run time (docker-compose.yml, docs/operations.md).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/copy-lua.mjs scripts/
COPY src src
COPY queues queues
COPY workers workers
COPY board board
COPY cli cli
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production \
    KVM2_CONFIG=/etc/kvm2/config.yaml
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
# `kvm2 …` in the container (docker-compose exec worker kvm2 check), as the runbook writes it.
RUN chmod +x dist/cli/main.js && ln -s /app/dist/cli/main.js /usr/local/bin/kvm2
# Runs as the owner of the mounted config and keys (docker-compose.yml's user:); node otherwise.
USER node
EXPOSE 3000 9464
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["worker"]
