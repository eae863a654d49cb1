"""TRL reward functions backed by `bcb serve` (GRPOTrainer(reward_funcs=[bcb_reward])).

The dataset must carry a `task_id` column (e.g. "BigCodeBench/13"); TRL passes dataset
columns as keyword arguments. Each completion (a chat answer) is sent with `sanitize: true`:
the server extracts its code as `bcb sanitize` does. Reward: 1.0 when the task's whole
unittest suite passes, else 0.0; `None` for rows without a task id (the function does not
apply to them). With `log_metric` (TRL passes it) the batch's partial credit
(`bcb/tests_passed_frac`, mean tests_passed / tests_total) and hack rate (`bcb/hack_rate`)
are logged beside `bcb/pass_rate`; `bcb_partial_reward` rewards the fraction itself.
"""

from bcb_client import BcbClient, answer_text, hacked, partial_credit

CLIENT = BcbClient()


def _samples(completions, task_id):
    ids = task_id if isinstance(task_id, (list, tuple)) else [task_id] * len(completions)
    rows = [(i, t, answer_text(c)) for i, (t, c) in enumerate(zip(ids, completions)) if t]
    return rows, [{"task_id": t, "solution": text} for _, t, text in rows]


def _rewards(n, rows, results, log_metric=None, score=lambda r: float(r["reward"])):
    out = [None] * n
    for (i, _, _), r in zip(rows, results):
        out[i] = score(r)
    if log_metric is not None and results:
        mean = lambda f: sum(f(r) for r in results) / len(results)
        log_metric("bcb/pass_rate", mean(lambda r: r["reward"]))
        log_metric("bcb/tests_passed_frac", mean(partial_credit))
        log_metric("bcb/hack_rate", mean(hacked))
    return out


def bcb_reward(prompts, completions, completion_ids=None, trainer_state=None, log_extra=None,
               log_metric=None, task_id=None, **kwargs):
    rows, samples = _samples(completions, task_id)
    results = CLIENT.evaluate(samples, sanitize=True) if samples else []
    return _rewards(len(completions), rows, results, log_metric)


async def bcb_reward_async(prompts, completions, completion_ids=None, trainer_state=None,
                           log_extra=None, log_metric=None, task_id=None, **kwargs):
    rows, samples = _samples(completions, task_id)
    results = await CLIENT.evaluate_async(samples, sanitize=True) if samples else []
    return _rewards(len(completions), rows, results, log_metric)


def bcb_partial_reward(prompts, completions, completion_ids=None, trainer_state=None,
                       log_extra=None, log_metric=None, task_id=None, **kwargs):
    """Partial credit: tests_passed / tests_total of the task's suite (0.0 for a module error
    or a timeout)."""
    rows, samples = _samples(completions, task_id)
    results = CLIENT.evaluate(samples, sanitize=True) if samples else []
    return _rewards(len(completions), rows, results, log_metric, partial_credit)
