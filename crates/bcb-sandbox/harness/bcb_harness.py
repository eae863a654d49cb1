# bcb execution harness, the entry: `python -I bcb_harness.py` is a slot, `--zygote` the pool's
# zygote. The harness itself is the package beside this file (its `__init__` says what each
# module does, and the wire protocol).
#
# The package is loaded from its own directory without that directory ever being on sys.path
# (`-I` keeps it off: a sample's files there could otherwise shadow a module), and its modules
# then leave sys.modules: a sample finds no harness module by name, as before the package,
# when the harness was this one file. What a sample can still reach (function globals, this
# module as `__main__`) is under the integrity snapshot: every namespace registered here.

if __name__ == "__main__":
    import importlib.util
    import os
    import sys

    def load():
        """Imports the package and returns its two entry points (slot, zygote)."""
        pkg = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bcb_harness")
        spec = importlib.util.spec_from_file_location("bcb_harness", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
        sys.modules["bcb_harness"] = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(sys.modules["bcb_harness"])
            from bcb_harness import integrity, slot, zygote
        finally:
            mods = [sys.modules.pop(n) for n in list(sys.modules) if n == "bcb_harness" or n.startswith("bcb_harness.")]
            sys.path_importer_cache.pop(pkg, None)
        integrity.register([vars(m) for m in mods] + [globals()])
        return slot.main, zygote.zygote_main

    main, zygote_main = load()
    if sys.argv[1:] == ["--zygote"]:
        zygote_main()
    else:
        main()
