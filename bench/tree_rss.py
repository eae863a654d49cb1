"""Peak of the summed RSS of a process and all its descendants, sampled once a second until
the process exits (standard library only). Cheap on purpose: one pass over /proc a sample, in
one process (a pgrep per descendant five times a second took 100 core-s of a 250-s run from
the samples it measured). Shared copy-on-write pages count once per process, so the sum is an
upper bound on the memory the tree holds.

usage: tree_rss.py PID OUT   writes the peak (KB) to OUT and its own CPU to stderr
"""
import os
import resource
import sys
import time


def tree_rss_kb(root):
    parent, rss = {}, {}
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # exited meanwhile
        fields = stat[stat.rindex(b")") + 2 :].split()
        pid = int(name)
        parent[pid] = int(fields[1])
        rss[pid] = int(fields[21]) * page_kb
    children = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


def main():
    root, out = int(sys.argv[1]), sys.argv[2]
    peak = 0
    while os.path.exists(f"/proc/{root}"):
        peak = max(peak, tree_rss_kb(root))
        time.sleep(1.0)
    with open(out, "w") as f:
        f.write(f"{peak}\n")
    use = resource.getrusage(resource.RUSAGE_SELF)
    print(f"tree_rss.py: {use.ru_utime + use.ru_stime:.1f} s of CPU", file=sys.stderr)


if __name__ == "__main__":
    main()
