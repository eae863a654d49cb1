"""How often a task's canonical solution fails one of its own tests by chance, in one
interpreter: the task's code and tests from the dataset, the named test run N times (each run
draws its own random data, as a fresh sample would).

usage: $BCB_PYTHON bench/flaky-task.py TASK TEST [N=400]
       e.g. bench/flaky-task.py 236 test_more_data 400
env:   BCB_DATASET_DIR (the folder holding bigcodebench-v0.1.4.jsonl.gz)
"""
import glob
import gzip
import json
import os
import sys
import unittest

task, test = "BigCodeBench/" + sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 400
path = glob.glob(os.path.join(os.environ["BCB_DATASET_DIR"], "**", "bigcodebench-v0.1.4.jsonl.gz"), recursive=True)[0]
row = next(r for r in map(json.loads, gzip.open(path, "rt")) if r["task_id"] == task)
ns = {"__name__": "__test__"}
exec(compile(row["code_prompt"] + row["canonical_solution"] + "\n" + row["test"], "__test__.py", "exec"), ns)
failed = 0
for _ in range(n):
    result = unittest.TestResult()
    ns["TestCases"](test).run(result)
    failed += not result.wasSuccessful()
print(f"{task} {test}: {failed} of {n} runs failed")
