"""A verl custom reward (`custom_reward_function.path=examples/rl/verl_reward.py`,
`custom_reward_function.name=compute_score`) backed by `bcb serve`.

`ground_truth` (or `extra_info["task_id"]`) names the BigCodeBench task; `solution_str` is the
model's answer (code extracted server-side as `bcb sanitize` does). Returns a dict whose
`score` is 1.0 when the whole unittest suite passes, else 0.0, plus what verl logs beside it
(`reward_extra_info`): the partial credit `tests_passed_frac` (use it as the score for partial
credit), `tests_passed`, `tests_total`, and `hack` (1.0 when a hack flag is set).
"""

from bcb_client import BcbClient, hacked, partial_credit

CLIENT = BcbClient()


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    task_id = (extra_info or {}).get("task_id") or ground_truth
    if isinstance(task_id, dict):
        task_id = task_id.get("task_id")
    r = CLIENT.evaluate([{"task_id": str(task_id), "solution": solution_str}], sanitize=True)[0]
    return {
        "score": float(r["reward"]),
        "status": r["status"],
        "tests_passed": r["tests_passed"],
        "tests_total": r["tests_total"],
        "tests_passed_frac": partial_credit(r),
        "hack": hacked(r),
    }
