#!/bin/sh
# The entry point of every function image (infra/Containerfile); FUNCTION is baked in at build time.
#   lambda  the Lambda runtime interface client calls functions.$FUNCTION.app.handler
#   http    uvicorn serves functions.$FUNCTION.app:app on $PORT (default 8080): any container platform,
#           or Lambda behind the Lambda Web Adapter (the streaming answer function)
#   (none)  lambda when the Lambda Runtime API is present, http otherwise
# uvicorn reads no forwarded header (--no-proxy-headers): the app decides which address is the caller's (ADR 0116)
set -eu
: "${FUNCTION:?FUNCTION is not set: build with --build-arg FUNCTION=classify|retrieve|answer|export}"
mode="${1:-auto}"
if [ "$mode" = auto ]; then
    if [ -n "${AWS_LAMBDA_RUNTIME_API:-}" ]; then mode=lambda; else mode=http; fi
fi
case "$mode" in
    lambda) exec python -m awslambdaric "functions.${FUNCTION}.app.handler" ;;
    http) exec python -m uvicorn "functions.${FUNCTION}.app:app" --host 0.0.0.0 --port "${PORT:-8080}" --no-access-log --no-proxy-headers ;;
    *) exec "$@" ;;
esac
