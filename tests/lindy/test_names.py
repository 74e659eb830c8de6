"""Names that say one thing (issue 27 part 7): no two models, API schemas, exceptions or data
classes of the product share a name for different things. Two ninja schemas with one name would
make the OpenAPI document show one shape for both."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from collections import defaultdict

from django.db import models
from ninja import Schema

from lindy.api_root import api

PRODUCT_APPS = ("lindy", "router", "memory", "hydration", "validator", "channels_app", "analyst", "agent", "drafting")


def _product_classes() -> list[type]:
    found = []
    for app in PRODUCT_APPS:
        package = importlib.import_module(app)
        for info in pkgutil.walk_packages(package.__path__, f"{app}."):
            if ".migrations" in info.name:
                continue
            module = importlib.import_module(info.name)
            found += [obj for obj in vars(module).values()
                      if inspect.isclass(obj) and obj.__module__ == module.__name__]
    return found


def _is_domain_type(cls: type) -> bool:
    return (issubclass(cls, (models.Model, BaseException, Schema)) or dataclasses.is_dataclass(cls)) and not (
        issubclass(cls, models.Model) and cls._meta.abstract is False and cls._meta.auto_created)


def collisions(classes: list[type]) -> dict[str, list[str]]:
    """Names that more than one class answers to, with where each is defined."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for cls in classes:
        by_name[cls.__name__].add(f"{cls.__module__}.{cls.__qualname__}")
    return {name: sorted(where) for name, where in by_name.items() if len(where) > 1}


def test_no_two_models_schemas_exceptions_or_data_classes_share_a_name():
    found = collisions([cls for cls in _product_classes() if _is_domain_type(cls)])
    assert found == {}


def test_every_openapi_component_is_one_schema_class():
    """Each component the OpenAPI document names is one Schema class of the product."""
    components = set(api.get_openapi_schema()["components"]["schemas"])
    schemas = [cls for cls in _product_classes() if issubclass(cls, Schema)]
    named = defaultdict(set)
    for cls in schemas:
        named[cls.__name__].add(cls)
    shared = {name: sorted(c.__module__ for c in named[name]) for name in components if len(named.get(name, ())) > 1}
    assert shared == {}


def test_the_check_sees_two_schemas_with_one_name():
    """The test of the test: two schemas called the same in different modules are found."""

    def make(module: str) -> type:
        return type("TargetOut", (Schema,), {"__module__": module, "__annotations__": {"name": str}})

    found = collisions([make("router.api"), make("router.api_rollouts")])
    assert list(found) == ["TargetOut"] and len(found["TargetOut"]) == 2
