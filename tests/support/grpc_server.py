#!/usr/bin/env python3
"""A real grpcio server for the gRPC check tests. Prints "PORT n" when ready.

  grpc_server.py HOST [--tls CERT KEY]

Health (grpc.health.v1 from grpcio-health-checking): "" and "web" SERVING,
"down" NOT_SERVING, anything else NOT_FOUND. Unary methods of test.Probe
(raw bytes, no generated code): Ok returns OK; NotFound aborts with
NOT_FOUND; Meta returns OK only if metadata x-token is "s3cret", else
UNAUTHENTICATED.
"""
import sys
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc


def ok(request, context):
    return b""


def not_found(request, context):
    context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")


def meta(request, context):
    md = dict(context.invocation_metadata())
    if md.get("x-token") != "s3cret":
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad token")
    return b""


def main():
    host = sys.argv[1]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    h = health.HealthServicer()
    h.set("", health_pb2.HealthCheckResponse.SERVING)
    h.set("web", health_pb2.HealthCheckResponse.SERVING)
    h.set("down", health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(h, server)
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(fn)
        for name, fn in (("Ok", ok), ("NotFound", not_found), ("Meta", meta))
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("test.Probe", handlers),))
    addr = f"[{host}]:0" if ":" in host else f"{host}:0"
    if len(sys.argv) > 2 and sys.argv[2] == "--tls":
        with open(sys.argv[3], "rb") as c, open(sys.argv[4], "rb") as k:
            creds = grpc.ssl_server_credentials([(k.read(), c.read())])
        port = server.add_secure_port(addr, creds)
    else:
        port = server.add_insecure_port(addr)
    server.start()
    print(f"PORT {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
