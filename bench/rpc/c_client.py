#!/usr/bin/python3
"""libvirt's own C client (Debian's python3-libvirt) driving the same calls as our client.

usage: c_client.py URI CALLS THREADS [START_AT]
Prints one JSON line: {"calls": N, "seconds": S, "rate": N/S, "start": T0, "end": T1}.
THREADS > 1 share one connection (libvirt's C client pipelines calls from several threads on
one socket). START_AT (epoch seconds) makes several processes start their calls together,
so their combined rate is total calls over the common wall time.
"""
import json
import sys
import threading
import time

import libvirt

libvirt.registerErrorHandler(lambda *_: None, None)

uri, calls, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
start_at = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
conn = libvirt.open(uri)
for _ in range(200):  # warm up: first calls pay for lazy setup on both sides
    conn.getLibVersion()


def run(k):
    for _ in range(k):
        conn.getLibVersion()


if start_at > time.time():
    time.sleep(start_at - time.time())
wall0 = time.time()
t0 = time.perf_counter()
if threads == 1:
    run(calls)
else:
    per = calls // threads
    workers = [threading.Thread(target=run, args=(per,)) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    calls = per * threads
seconds = time.perf_counter() - t0
wall1 = time.time()
conn.close()
print(json.dumps({"calls": calls, "seconds": seconds, "rate": calls / seconds, "start": wall0, "end": wall1}))
