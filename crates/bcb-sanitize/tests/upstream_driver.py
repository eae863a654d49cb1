"""Runs the ORIGINAL sanitizer (bigcodebench 0.2.5, installed with --no-deps) on JSONL input.

Only sanitize.py and syncheck.py are loaded, straight from the installed package files, with
stand-ins for the imports they do not use here (pqdm, tqdm, termcolor, bigcodebench.data), so
none of the package's heavy dependencies are needed.

stdin: one JSON object per line {"op": "sanitize"|"extract"|"syncheck", "code": str, "entry": str|null}
stdout: one JSON object per line {"out": ...} or {"error": "ExceptionType: message"}
With --bench FILE: sanitizes every record of FILE and prints the seconds it took.
"""
import importlib.util
import json
import pathlib
import sys
import time
import types


def load_original():
    spec = importlib.util.find_spec("bigcodebench")
    pkg_dir = pathlib.Path(list(spec.submodule_search_locations)[0])
    for name in ["pqdm", "pqdm.processes", "tqdm", "termcolor", "bigcodebench", "bigcodebench.data"]:
        sys.modules[name] = types.ModuleType(name)
    sys.modules["pqdm.processes"].pqdm = None
    sys.modules["tqdm"].tqdm = None
    sys.modules["termcolor"].colored = lambda s, *a, **k: s
    sys.modules["bigcodebench"].__path__ = [str(pkg_dir)]
    data = sys.modules["bigcodebench.data"]
    for attr in ["get_bigcodebench", "load_solutions", "write_directory", "write_jsonl"]:
        setattr(data, attr, None)
    mods = {}
    for name in ["syncheck", "sanitize"]:
        s = importlib.util.spec_from_file_location(f"bigcodebench.{name}", pkg_dir / f"{name}.py")
        m = importlib.util.module_from_spec(s)
        sys.modules[f"bigcodebench.{name}"] = m
        s.loader.exec_module(m)
        mods[name] = m
    return mods["sanitize"], mods["syncheck"]


def main():
    sanitize, syncheck = load_original()
    if len(sys.argv) == 3 and sys.argv[1] == "--bench":
        recs = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8") if l.strip()]
        t0 = time.perf_counter()
        for r in recs:
            sanitize.sanitize(r["code"], r.get("entry"))
        print(f"{time.perf_counter() - t0:.3f}")
        return
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        r = json.loads(line)
        try:
            if r["op"] == "sanitize":
                res = sanitize.sanitize(r["code"], r.get("entry"))
            elif r["op"] == "extract":
                res = sanitize.code_extract(r["code"])
            else:
                res = syncheck.syntax_check(r["code"])
            out.write(json.dumps({"out": res}) + "\n")
        except Exception as e:  # the original raises on some inputs; report, don't die
            out.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
