# The image the Kubernetes example names (deploy/kubernetes.yaml, docs/stores.md): LLMSim from its own wheel, with
# the Redis extra, run as a non-root user. Build it from the repository's root, tagged with its version:
#   docker build -t registry.example.com/llmsim:0.1.0 .
# Stage 1 builds the wheel from the sources; stage 2 installs only that wheel, so the image holds no source tree.
ARG PYTHON_IMAGE=python:3.12-slim

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
RUN pip install --no-cache-dir "build==1.*"
COPY . .
RUN python -m build --wheel --outdir /dist

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LLMSIM_HOST=0.0.0.0 \
    LLMSIM_PORT=8080
COPY --from=build /dist /dist
# One wheel in /dist: the shell expands its name for pip.
RUN pip install --no-cache-dir "$(ls /dist/llmsim-*.whl)[redis]" \
    && rm -rf /dist \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin llmsim
USER 10001
WORKDIR /tmp
EXPOSE 8080
# The slim image has no curl: the health check asks /llmsim/health with the Python it ships.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(f\"http://127.0.0.1:{os.environ.get('LLMSIM_PORT', '8080')}/llmsim/health\", timeout=2)"]
ENTRYPOINT ["llmsim"]
CMD ["serve"]
