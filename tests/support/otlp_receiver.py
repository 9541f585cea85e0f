"""An OTLP/HTTP and OTLP/gRPC receiver for tests/otel_export.rs: decodes
each request (metrics; traces or logs when the path ends in /v1/traces or
/v1/logs, or by the gRPC service called) with the official protobuf
definitions (PyPI opentelemetry-proto, its gRPC service stubs with grpcio)
and prints it as one JSON line. A missing module is an error, never a skip.

usage: otlp_receiver.py IP PORT MODE [CERT KEY]
  (with CERT and KEY: https or grpcs, TLS with that certificate)
  ok        answer 200 to everything
  503       answer 503 with Retry-After: 2 to the first request, then 200
  503traces answer 503 (no Retry-After) to every /v1/traces request, 200
            to the others
  hang      accept and read, print {"status": "hang"}, never answer
  garbage   answer bytes that are not HTTP, then close
  grpc      OTLP/gRPC: answer OK to every Export
  grpc-unavailable  OTLP/gRPC: UNAVAILABLE to the first call, then OK
  grpc-invalid      OTLP/gRPC: INVALID_ARGUMENT to every call
  grpc-hang         OTLP/gRPC: print {"status": "hang"}, never answer
Prints "listening" once bound, then one line per request:
{"t": monotonic seconds, "path": ..., "headers": {...}, "status": answered,
 "resource": {...}, "metrics": [{"name", "kind", "monotonic", "temporality",
 "points": [{"attrs", "value" | "count", "sum", "bounds", "counts"}]}]}
or, for traces, "spans": [{"name", "trace_id", "span_id", "start", "end",
 "attrs", "status", "kind"}] in place of "metrics"; for logs, "records":
 [{"time", "severity", "severity_text", "body"}]. Over gRPC "path" is the
method, "status" the status code's name, "headers" the metadata, and
"bytes" the request's size.
"""
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

IP, PORT, MODE = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seen = 0


def attrs(kvs):
    out = {}
    for kv in kvs:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out


def decode_traces(body):
    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    assert len(req.resource_spans) == 1, "one resource"
    rs = req.resource_spans[0]
    spans = []
    for ss in rs.scope_spans:
        for s in ss.spans:
            spans.append({"name": s.name, "trace_id": s.trace_id.hex(),
                          "span_id": s.span_id.hex(), "kind": s.kind,
                          "start": s.start_time_unix_nano,
                          "end": s.end_time_unix_nano,
                          "attrs": attrs(s.attributes), "status": s.status.code})
    return {"resource": attrs(rs.resource.attributes),
            "scope": rs.scope_spans[0].scope.name if rs.scope_spans else None,
            "spans": spans}


def decode_logs(body):
    req = ExportLogsServiceRequest()
    req.ParseFromString(body)
    assert len(req.resource_logs) == 1, "one resource"
    rl = req.resource_logs[0]
    records = []
    for sl in rl.scope_logs:
        for r in sl.log_records:
            records.append({"time": r.time_unix_nano, "severity": r.severity_number,
                            "severity_text": r.severity_text,
                            "body": r.body.string_value})
    return {"resource": attrs(rl.resource.attributes), "records": records}


def decode(body):
    req = ExportMetricsServiceRequest()
    req.ParseFromString(body)
    assert len(req.resource_metrics) == 1, "one resource"
    rm = req.resource_metrics[0]
    metrics = []
    for sm in rm.scope_metrics:
        for m in sm.metrics:
            kind = m.WhichOneof("data")
            d = {"name": m.name, "kind": kind, "help": m.description, "points": []}
            data = getattr(m, kind)
            if kind == "sum":
                d["monotonic"] = data.is_monotonic
            if kind in ("sum", "histogram"):
                d["temporality"] = data.aggregation_temporality
            for p in data.data_points:
                q = {"attrs": attrs(p.attributes), "time": p.time_unix_nano,
                     "start": p.start_time_unix_nano}
                if kind == "histogram":
                    q.update(count=p.count, sum=p.sum, bounds=list(p.explicit_bounds),
                             counts=list(p.bucket_counts))
                else:
                    q["value"] = p.as_double
                d["points"].append(q)
            metrics.append(d)
    return {"resource": attrs(rm.resource.attributes),
            "scope": rm.scope_metrics[0].scope.name if rm.scope_metrics else None,
            "metrics": metrics}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        global seen
        seen += 1
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if MODE == "hang":
            # Says it has the request, then never answers it.
            print(json.dumps({"t": time.monotonic(), "status": "hang"}), flush=True)
            time.sleep(3600)
            return
        if MODE == "garbage":
            self.wfile.write(b"\x00\x01garbage that is not HTTP\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
            status = "garbage"
        else:
            status = 503 if (MODE == "503" and seen == 1) else 200
            if MODE == "503traces" and self.path.endswith("/v1/traces"):
                status = 503
            self.send_response(status)
            if status == 503 and MODE == "503":
                self.send_header("Retry-After", "2")
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()
        line = {"t": time.monotonic(), "path": self.path, "status": status,
                "content_type": self.headers.get("Content-Type"),
                "headers": {k.lower(): v for k, v in self.headers.items()}}
        if self.path.endswith("/v1/traces"):
            line.update(decode_traces(body))
        elif self.path.endswith("/v1/logs"):
            line.update(decode_logs(body))
        else:
            line.update(decode(body))
        print(json.dumps(line), flush=True)


class Server(HTTPServer):
    address_family = socket.AF_INET
    allow_reuse_address = True


def serve_grpc():
    from concurrent import futures
    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
    from opentelemetry.proto.collector.metrics.v1 import (
        metrics_service_pb2, metrics_service_pb2_grpc)
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    lock = threading.Lock()

    def handle(method, decoder, request, context, response):
        global seen
        with lock:
            seen += 1
            n = seen
        status = "OK"
        if MODE == "grpc-unavailable" and n == 1:
            status = "UNAVAILABLE"
        elif MODE == "grpc-invalid":
            status = "INVALID_ARGUMENT"
        elif MODE == "grpc-hang":
            status = "hang"
        body = request.SerializeToString()
        md = {k: v for k, v in context.invocation_metadata()}
        line = {"t": time.monotonic(), "path": method, "status": status,
                "headers": md, "bytes": len(body)}
        line.update(decoder(body))
        # Calls run on several threads: one whole line at a time.
        with lock:
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()
        if status == "hang":
            # Holds the call (and its server thread) past any client's
            # deadline; the test ends the process.
            time.sleep(120)
        if status != "OK":
            context.abort(getattr(grpc.StatusCode, status), "the test says " + status)
        return response

    name = "/opentelemetry.proto.collector.%s/Export"

    class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
        def Export(self, request, context):
            return handle(name % "metrics.v1.MetricsService", decode, request, context,
                          metrics_service_pb2.ExportMetricsServiceResponse())

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):
            return handle(name % "trace.v1.TraceService", decode_traces, request, context,
                          trace_service_pb2.ExportTraceServiceResponse())

    class Logs(logs_service_pb2_grpc.LogsServiceServicer):
        def Export(self, request, context):
            return handle(name % "logs.v1.LogsService", decode_logs, request, context,
                          logs_service_pb2.ExportLogsServiceResponse())

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), server)
    addr = "%s:%d" % (IP, PORT)
    if len(sys.argv) == 6:
        with open(sys.argv[4], "rb") as c, open(sys.argv[5], "rb") as k:
            creds = grpc.ssl_server_credentials([(k.read(), c.read())])
        bound = server.add_secure_port(addr, creds)
    else:
        bound = server.add_insecure_port(addr)
    assert bound == PORT, "cannot bind " + addr
    server.start()
    print("listening", flush=True)
    server.wait_for_termination()


if MODE.startswith("grpc"):
    serve_grpc()
    sys.exit(0)

srv = Server((IP, PORT), Handler)
if len(sys.argv) == 6:
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[4], sys.argv[5])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("listening", flush=True)
srv.serve_forever()
