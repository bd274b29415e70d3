"""The late rules course.yaml's ``late:`` may set, one small class each, and the policy they make.

A rule is a frozen dataclass whose fields are its keys under ``late:`` (the reference page shows
each field's ``doc``). ``check`` refuses a value that makes no sense, ``apply`` turns the share of
the points lost so far into the share lost once the rule has had its say, ``words`` says the rule
as every export shows it, and ``forgives`` is how long after the due date it keeps a hand-in free.
:data:`RULES` lists them in the order they apply: a new rule is one class added there.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from autograder.errors import ConfigError

DAY = 86400.0


def _fraction(where: str, value: float) -> None:
    if value > 1:
        raise ConfigError(f"{where}: a fraction of the points earned, at most 1, got {value:g}")


@dataclass(frozen=True)
class LateRule:
    """What every rule has; by default it forgives nothing."""

    def takes_points(self) -> bool:
        """Whether it can take points at all (a policy of a grace alone is no late penalty)."""
        return True

    def check(self, where: str) -> None:
        """Raise ConfigError (``where`` is ``course.yaml: late``) for a value that makes no sense."""

    def apply(self, seconds_late: float, share: float) -> float:
        return share

    def words(self) -> str:
        raise NotImplementedError

    def forgives(self) -> float:
        """Seconds after the due date during which this rule takes nothing."""
        return 0.0


@dataclass(frozen=True)
class PerStartedDay(LateRule):
    penalty_per_day: float = field(default=0.0, metadata={
        "doc": "the fraction of the points earned (0 to 1) lost per started day late"})
    max_penalty: float = field(default=1.0, metadata={"doc": "never more than this fraction (0 to 1) is lost"})

    def check(self, where: str) -> None:
        _fraction(f"{where}.penalty_per_day", self.penalty_per_day)
        _fraction(f"{where}.max_penalty", self.max_penalty)

    def apply(self, seconds_late: float, share: float) -> float:
        return min(self.max_penalty, self.penalty_per_day * math.ceil(seconds_late / DAY))

    def words(self) -> str:
        return f"{self.penalty_per_day:.0%} per started day late, at most {self.max_penalty:.0%}"

    def takes_points(self) -> bool:
        return bool(self.penalty_per_day)


@dataclass(frozen=True)
class ZeroAfter(LateRule):
    zero_after_days: float = field(metadata={
        "doc": "a hand-in later than this many days earns 0; without it, no cut-off"})

    def check(self, where: str) -> None:
        if self.zero_after_days == 0:
            raise ConfigError(f"{where}.zero_after_days: must be > 0 (leave it out for no cut-off)")

    def apply(self, seconds_late: float, share: float) -> float:
        return 1.0 if seconds_late > self.zero_after_days * DAY else share

    def words(self) -> str:
        return f"0 after {self.zero_after_days:g} days"


@dataclass(frozen=True)
class Grace(LateRule):
    grace_minutes: float = field(default=0.0, metadata={"doc": "up to this many minutes late counts as on time"})

    def apply(self, seconds_late: float, share: float) -> float:
        return 0.0 if seconds_late <= self.grace_minutes * 60 else share

    def words(self) -> str:
        return f"{self.grace_minutes:g} minutes' grace"

    def takes_points(self) -> bool:
        return False

    def forgives(self) -> float:
        return self.grace_minutes * 60


# in the order they apply: the daily penalty, then the cut-off above it, then the grace above both
RULES: tuple[type[LateRule], ...] = (PerStartedDay, ZeroAfter, Grace)


def keys(rule: type[LateRule]) -> list[dataclasses.Field]:
    """A rule's keys under ``late:``, as dataclass fields (each with its ``doc``)."""
    return list(dataclasses.fields(rule))


@dataclass(frozen=True)
class LatePolicy:
    """The rules course.yaml sets, in :data:`RULES`' order (autograder/course/late.py applies them)."""
    rules: tuple[LateRule, ...] = ()

    def fraction(self, seconds_late: float) -> float:
        """The share of the points earned that a hand-in ``seconds_late`` after its due date loses."""
        share = 0.0
        for rule in self.rules:
            share = rule.apply(seconds_late, share)
        return share

    def words(self) -> str:
        """The policy as every export says it."""
        if not any(rule.takes_points() for rule in self.rules):
            return "no late penalty"
        return "; ".join(rule.words() for rule in self.rules)

    def forgives(self) -> float:
        """Seconds after the due date during which a hand-in loses nothing."""
        return max((rule.forgives() for rule in self.rules), default=0.0)

    def rule(self, kind: type[LateRule]) -> LateRule | None:
        return next((r for r in self.rules if isinstance(r, kind)), None)


def policy(where: str, raw: dict[str, Any], number: Any) -> LatePolicy:
    """The policy of course.yaml's ``late:`` mapping ``raw``: each rule whose keys it gives, its
    values checked by ``number`` (config's check that a value is a number >= 0) and by the rule."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(raw).__name__}")
    owner = {f.name: rule for rule in RULES for f in keys(rule)}
    for key in raw:
        if key not in owner:
            raise ConfigError(f"{where}.{key}: unknown key (allowed: {', '.join(owner)})")
    rules = []
    for rule in RULES:
        given = {f.name: float(number(f"{where}.{f.name}", raw[f.name])) for f in keys(rule)
                 if raw.get(f.name) is not None}
        if given:
            made = rule(**given)
            made.check(where)
            rules.append(made)
    return LatePolicy(tuple(rules))
