"""Runs llama.cpp's HTTP server (PyPI `xllamacpp`) on loopback until stdin closes or SIGTERM.

Used by `bcb generate --model path/to/model.gguf` and by the end-to-end tests. Prints one line
`READY <host>:<port>` on stdout once the server is listening.
"""

import argparse
import os
import signal
import sys
import threading

# A plain Gemma chat template: the small test GGUF ships without one.
GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--alias", default=None)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--n-parallel", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--chat-template-file", default=None,
                    help="Jinja chat template; default: the model's own, else a Gemma template")
    ap.add_argument("--gemma-template", action="store_true",
                    help="use the built-in Gemma template (for GGUFs without one)")
    args = ap.parse_args()

    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = args.model
    if args.alias:
        p.model_alias = args.alias
    p.hostnames = [args.host]
    p.port = args.port
    p.n_ctx = args.n_ctx * args.n_parallel  # the context is shared between slots
    p.n_parallel = args.n_parallel
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.endpoint_metrics = True
    if args.chat_template_file:
        with open(args.chat_template_file, encoding="utf-8") as f:
            p.chat_template = f.read()
    elif args.gemma_template:
        p.chat_template = GEMMA_TEMPLATE

    server = xlc.Server(p)
    print(f"READY {server.listening_address}" if hasattr(server, "listening_address") else "READY", flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    # The parent holds our stdin; when it dies (even by SIGKILL) we see EOF and exit.
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait()
    del server
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
