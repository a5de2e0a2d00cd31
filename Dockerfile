# The `scriptorium` command with its native engine, for workers, producers and the dashboard.
#   docker build -t scriptorium .
#   docker run --rm scriptorium ocr --help
# Build stage: compiles the C++ addon (node-gyp, run by `npm ci` through the package's install
# script) and the TypeScript. Runtime stage: only what runs, as a non-root user.

# Node.js 24, the current LTS, on Debian bookworm (the build image and its -slim runtime twin); the
# code also runs on Node 20.10+ and 22 (package.json engines).
FROM node:24-bookworm AS build
# The addon's tool chain; node:24-bookworm ships it already, naming it keeps a base image change from
# dropping it silently.
# libvulkan-dev and glslc build the Vulkan GPU backend (native/vulkan); without them it is left out.
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ make python3 libvulkan-dev glslc \
 && rm -rf /var/lib/apt/lists/*
# node-gyp compiles against the headers this image ships instead of downloading them.
ENV npm_config_nodedir=/usr/local
WORKDIR /src
# Dependencies and the addon first, so that TypeScript edits do not rebuild them.
COPY package.json package-lock.json binding.gyp ./
COPY native/addon.cc native/sources.gypi native/
COPY native/common native/common
COPY native/cpu native/cpu
COPY native/vulkan native/vulkan
COPY native/probes native/probes
RUN npm ci --no-audit --no-fund
# Only src/ is copied, so tsconfig.json's test/ and bench/ globs match nothing here.
COPY tsconfig.json ./
COPY src src
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim AS runtime
# The Vulkan loader, and Mesa's drivers for AMD and Intel GPUs (NVIDIA's driver is mounted into the
# container by the NVIDIA Container Toolkit; see the gpu-worker service in docker-compose.yml).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libvulkan1 mesa-vulkan-drivers \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
# Stamped into every result: docker build --build-arg SCRIPTORIUM_COMMIT=$(git rev-parse HEAD) .
ARG SCRIPTORIUM_COMMIT=unknown
ENV SCRIPTORIUM_COMMIT=$SCRIPTORIUM_COMMIT
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/build/Release/*.node build/Release/
COPY --from=build /src/dist/src dist/src
# The page viewer's static script and style sheets, served and inlined as they are.
COPY viewer viewer
# Model checkpoints (`scriptorium model download v3 --dir /models/v3`) and the packed weights the
# workers of a host share (SCRIPTORIUM_PACKED_WEIGHTS_DIR); named volumes mounted here inherit the
# node user's ownership.
RUN mkdir -p /models /var/cache/scriptorium/packed && chown node:node /models /var/cache/scriptorium/packed
USER node
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["work"]
