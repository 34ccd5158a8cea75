"""Child process of :class:`~ragmeter.judges.backends.local.LocalServer`: llama.cpp's server on 127.0.0.1.

Prints ``READY http://127.0.0.1:PORT`` once the model is loaded and the port is open, then serves until
its stdin closes (the parent stopped it, or died), and removes its slot save folder before it exits.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -P llama_server.py")
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--parallel", type=int, required=True)
    parser.add_argument("--ctx", type=int, required=True)
    parser.add_argument("--slot-save-path", required=True)
    args = parser.parse_args()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the OS picks a free port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.warmup = False
    # slot states are saved to and restored from this folder only (the local judge's system messages); no
    # other prompt cache: a slot holds what was restored into it and what the call computes, nothing else
    params.slot_save_path = os.path.join(args.slot_save_path, "")  # llama.cpp appends the file name as is
    params.endpoint_slots = True
    params.cache_ram_mib = 0
    params.cache_idle_slots = False
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as exc:  # llama.cpp has logged why (a file that is no model, too little memory)
        sys.exit(f"llama.cpp's server did not start: {exc}")
    print(f"READY {server.listening_address}", flush=True)
    sys.stdin.read()  # returns at EOF: the parent closed the pipe or is gone
    shutil.rmtree(args.slot_save_path, ignore_errors=True)  # the saved slot states, also when the parent died
    os._exit(0)  # at once: the server's native threads would hold up an orderly interpreter exit


if __name__ == "__main__":
    main()
