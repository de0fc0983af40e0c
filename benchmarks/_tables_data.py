"""Real mixed-type tables shipped inside installable packages, with hand-written public schemas.

Nothing is downloaded at run time: ``palmerpenguins`` and ``vega_datasets`` (its local data)
carry the files; both are in the ``bench`` extra (``pip install -e '.[bench]'``).

The schemas are written by hand from public domain knowledge (round numbers wider than the
data: penguin measurements, 1970s cars, Seattle weather), not read off the data.  Float columns
with a handful of missing values (2 penguins, 8 + 6 cars) are declared not nullable, so those
values are imputed at the midpoint of the bounds; ``sex`` (11 missing penguins) is nullable.

Each table has a categorical ``target`` for the classifier score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from opendp_wasserstein.tables import Schema

__all__ = ["RealTable", "load", "NAMES", "mixed_synthetic"]


@dataclass(frozen=True)
class RealTable:
    name: str
    data: pd.DataFrame
    schema: Schema
    target: str
    source: str


def _penguins() -> RealTable:
    import palmerpenguins

    df = palmerpenguins.load_penguins()
    schema = Schema.from_json({"columns": {
        "species": {"type": "categorical", "categories": ["Adelie", "Chinstrap", "Gentoo"]},
        "island": {"type": "categorical", "categories": ["Biscoe", "Dream", "Torgersen"]},
        "bill_length_mm": {"type": "float", "bounds": [25, 65]},
        "bill_depth_mm": {"type": "float", "bounds": [10, 25]},
        "flipper_length_mm": {"type": "float", "bounds": [160, 240]},
        "body_mass_g": {"type": "float", "bounds": [2000, 7000]},
        "sex": {"type": "categorical", "categories": ["female", "male"], "nullable": True},
        "year": {"type": "int", "bounds": [2007, 2009]},
    }})
    df = df.astype({"species": object, "island": object, "sex": object})
    df["sex"] = df["sex"].where(df["sex"].notna(), None)
    return RealTable("penguins", df, schema, "species", "palmerpenguins 0.1")


def _cars() -> RealTable:
    from vega_datasets import local_data

    df = local_data.cars().drop(columns=["Name"])
    df = df.astype({"Origin": object})
    schema = Schema.from_json({"columns": {
        "Miles_per_Gallon": {"type": "float", "bounds": [5, 50]},
        "Cylinders": {"type": "int", "bounds": [3, 8]},
        "Displacement": {"type": "float", "bounds": [50, 500]},
        "Horsepower": {"type": "float", "bounds": [40, 250]},
        "Weight_in_lbs": {"type": "int", "bounds": [1500, 5500]},
        "Acceleration": {"type": "float", "bounds": [5, 25]},
        "Year": {"type": "datetime", "bounds": ["1970-01-01", "1983-01-01"]},
        "Origin": {"type": "categorical", "categories": ["USA", "Europe", "Japan"]},
    }})
    return RealTable("cars", df, schema, "Origin", "vega_datasets 0.9 (local)")


def _seattle() -> RealTable:
    from vega_datasets import local_data

    df = local_data.seattle_weather().astype({"weather": object})
    schema = Schema.from_json({"columns": {
        "date": {"type": "datetime", "bounds": ["2012-01-01", "2016-01-01"]},
        "precipitation": {"type": "float", "bounds": [0, 60]},
        "temp_max": {"type": "float", "bounds": [-10, 40]},
        "temp_min": {"type": "float", "bounds": [-15, 30]},
        "wind": {"type": "float", "bounds": [0, 12]},
        "weather": {"type": "categorical", "categories": ["drizzle", "rain", "sun", "snow", "fog"]},
    }})
    return RealTable("seattle-weather", df, schema, "weather", "vega_datasets 0.9 (local)")


_LOADERS = {"penguins": _penguins, "cars": _cars, "seattle-weather": _seattle}
NAMES = tuple(_LOADERS)


def load(name: str) -> RealTable:
    """A shipped table and its public schema (``ImportError`` if the ``bench`` extra is missing)."""
    return _LOADERS[name]()


def mixed_synthetic(n: int, seed: int = 0) -> RealTable:
    """A synthetic mixed table with dependence between its columns (region -> age -> income,
    smoker -> income), for the split-order comparison at larger ``n``."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["n", "e", "s", "w", "c"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    smoker = rng.uniform(size=n) < 0.25
    age = np.clip(rng.normal(45 + 8 * (region == "s") - 6 * (region == "w"), 12, n), 18, 90).astype(np.int64)
    income = np.clip(np.exp(rng.normal(10 + 0.01 * age - 0.3 * smoker, 0.4)), 0, 2e5)
    df = pd.DataFrame({"region": region.astype(object), "smoker": smoker, "age": age, "income": income})
    schema = Schema.from_json({"columns": {
        "region": {"type": "categorical", "categories": ["n", "e", "s", "w", "c"]},
        "smoker": {"type": "bool"},
        "age": {"type": "int", "bounds": [0, 100]},
        "income": {"type": "float", "bounds": [0, 200000]},
    }})
    return RealTable(f"mixed-{n}", df, schema, "region", "synthetic")
