"""The product's settings for `make loadtest`, with one addition: the URLs include the trivial
signed-in view of `make bench` (bench/bench_urls.py: the signed-in layout, navigation included,
with an empty body), the baseline every page group's p95 is compared with. Nothing else differs
from production; the environment is read exactly as lindy.settings reads it."""

from lindy.settings import *  # noqa: F403

ROOT_URLCONF = "bench.bench_urls"
