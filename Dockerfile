# The Keelson image: the worker (default command) and the API (deploy/helm/keelson values api.command) share it.
# Build and push from a checkout: docker build -t ghcr.io/keelson/keelson:0.1.0 . (docs/install.md).

# The base of both stages: a supported Node LTS line (Node 20's support ended in April 2026). A release pins it by
# digest: --build-arg NODE_IMAGE=node:22-bookworm-slim@sha256:<digest> (docs/install.md, "The image").
ARG NODE_IMAGE=node:22-bookworm-slim

# Build: every dependency, the TypeScript compiled to dist/ with the workflow bundle (a restarted worker skips
# webpack), then the dev dependencies removed.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build && npm run bundle -- dist/workflow-bundle.js && npm prune --omit=dev

# Run: production dependencies and compiled code only, as a non-root user (the chart's runAsUser).
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
ENV KEELSON_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
USER 10001:10001
CMD ["node", "dist/workers/worker.js"]
