"""The public-benchmark table on /validator/evals/: the stored numbers of the last run of the
public eval set (CI checks they are what the code gives)."""

from django import template

from validator import public_bench

register = template.Library()


@register.inclusion_tag("validator/public_bench.html")
def public_benchmark() -> dict:
    return {"report": public_bench.stored()}
