"""Writes the Parquet data files track's tests read, as DuckDB, pyarrow and polars write them,
in every compression each offers. Run with the venv of .ci/parquet-readers.sh (its pinned
versions), into the folder given (default: this one):

    target/parquet-readers/venv/bin/python tests/data/parquet/write.py [DIR]

Each file holds the same three math cases, with the values that readers get wrong: a NaN and an
infinity, zone-less timestamps (micro- and nanoseconds), a UTC one, a date, and a struct that is
null in the second row.
"""
import datetime as dt
import os
import sys

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
T0 = dt.datetime(2024, 1, 2, 3, 4, 5)
NS0 = 1_704_164_645 * 1_000_000_000

TABLE = pa.table({
    "qid": ["q1", "q2", "q3"],
    "a": pa.array([1, 2, 3], pa.int64()),
    "b": pa.array([2, 3, 4], pa.int64()),
    "answer": ["2", "6", "12"],
    "x": [0.5, float("nan"), float("inf")],
    "naive": pa.array([T0, T0 + dt.timedelta(microseconds=123456), None], pa.timestamp("us")),
    "utc": pa.array(
        [T0, T0 + dt.timedelta(milliseconds=500), T0], pa.timestamp("ms", tz="UTC")),
    "ns": pa.array([NS0, NS0 + 1, NS0 + 123456789], pa.timestamp("ns")),
    "d": pa.array([dt.date(2024, 1, 2), dt.date(1969, 12, 31), None], pa.date32()),
    "s": pa.array(
        [{"k": 1, "v": "x"}, None, {"k": None, "v": "y"}],
        pa.struct([("k", pa.int64()), ("v", pa.string())])),
})

CODECS = {
    "pyarrow": ["none", "snappy", "gzip", "brotli", "lz4", "zstd"],
    "duckdb": ["uncompressed", "snappy", "gzip", "brotli", "lz4_raw", "zstd"],
    "polars": ["uncompressed", "snappy", "gzip", "brotli", "lz4", "zstd"],
}


def name(writer, codec):
    codec = {"none": "uncompressed", "lz4": "lz4_raw"}.get(codec, codec)
    return os.path.join(OUT, f"{writer}-{codec}.parquet")


for codec in CODECS["pyarrow"]:
    pq.write_table(TABLE, name("pyarrow", codec), compression=codec)
con = duckdb.connect()
con.register("cases", TABLE)
for codec in CODECS["duckdb"]:
    con.execute(f"COPY cases TO '{name('duckdb', codec)}' (FORMAT parquet, COMPRESSION {codec})")
frame = pl.from_arrow(TABLE)
for codec in CODECS["polars"]:
    frame.write_parquet(name("polars", codec), compression=codec)
