"""The sample's freezer cgroup, driven by the orchestrator's ops, within a budget."""

import json
import time

from . import cgroupfs
from .clock import frozen_clock_write


class Freezer:
    """The sample's freezer cgroup, driven by the orchestrator's ops,
    and the time it has spent frozen or credited: at most `budget` seconds, after which the
    sample is thawed here and never frozen or credited again, whatever the orchestrator
    does (its deadlines so move by at most the budget)."""

    def __init__(self, path, budget):
        self.path, self.total, self.since = path, 0.0, None
        self.budget = budget
        # Set once the verdict is out: the orchestrator no longer tracks the sample, so nothing
        # would thaw it; its exit must not wait on a late freeze.
        self.done = False
        frozen_clock_write(0.0)
        self.write(False)  # a job never starts in a frozen group

    def write(self, frozen):
        if self.path:
            cgroupfs.set_frozen(self.path, frozen)

    def op(self, line, key):
        try:
            msg = json.loads(line)
            op = msg.get("op") if msg.get("key") == key else None
        except (ValueError, AttributeError):
            return
        if op == "freeze" and self.path and self.since is None and not self.done and self.total < self.budget:
            self.since = time.time()
            self.write(True)
        elif op == "thaw":
            self.thaw()
        elif op == "credit" and not self.done:
            # Time it waited for a core at the lowest CPU weight: counted as frozen time.
            secs = msg.get("secs")
            if isinstance(secs, (int, float)) and 0 < secs <= 10:
                self.total = min(self.total + secs, self.budget)
                if self.since is None:
                    frozen_clock_write(self.total)

    def thaw(self):
        if self.since is not None:
            self.total = min(self.total + time.time() - self.since, self.budget)
            self.since = None
            frozen_clock_write(self.total)  # before it runs again: its alarm reads this
            self.write(False)

    def expire(self):
        """Thaws the sample once it has been held for its whole budget."""
        if self.since is not None and self.frozen_secs() >= self.budget:
            self.thaw()

    def until_spent(self):
        """Seconds until a frozen sample's budget runs out (None while it runs)."""
        return None if self.since is None else max(self.budget - self.frozen_secs(), 0.0)

    def frozen_secs(self):
        return min(self.total + (time.time() - self.since if self.since is not None else 0.0), self.budget)
