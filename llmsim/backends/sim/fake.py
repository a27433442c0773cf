"""Faker, imported and built at its first use rather than at a worker's start.

Importing Faker and building one costs a worker ~0.25 s of CPU (it scans every locale it ships) and ~10 MB, and
most requests (prose, echo or lorem text, no hosted tools, no JSON Schema strings it fills) draw nothing from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from faker import Faker


class LazyFaker:
    """Stands for a `Faker()`: builds it at the first attribute asked for. A seed given before that is applied
    then; since `seed_instance` starts the generator afresh, the draws are those the Faker built at once would
    have made."""

    def __init__(self) -> None:
        self._faker: Faker | None = None
        self._seed: Any = None
        self._seeded = False

    def seed_instance(self, seed: Any = None) -> None:
        if self._faker is None:
            self._seed, self._seeded = seed, True
        else:
            self._faker.seed_instance(seed)

    def __getattr__(self, name: str) -> Any:
        if name in ("_faker", "_seed", "_seeded"):  # not set yet (a copy made without __init__): not Faker's
            raise AttributeError(name)
        if self._faker is None:
            from faker import Faker

            self._faker = Faker()
            if self._seeded:
                self._faker.seed_instance(self._seed)
        return getattr(self._faker, name)


def lazy_faker() -> Faker:
    """A LazyFaker, typed as the Faker it stands for."""
    return cast("Faker", LazyFaker())
