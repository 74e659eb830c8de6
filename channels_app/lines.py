"""Human names for sending lines: support says "Line 5 · CHI", not "+13125550105".

A label written as "Line 5 (CHI)" or "Line 5 - CHI" reads "Line 5 · CHI"; any other label is kept
and given its city. A line without a label is named by the last four digits of its number and its
city (from a North American area code) or its country code: "Line …0105 · CHI"."""

from __future__ import annotations

import re

# North American area codes of the cities lines are bought in, as support abbreviates them.
AREA_CITIES = {
    "212": "NYC", "646": "NYC", "917": "NYC", "718": "NYC", "332": "NYC",
    "415": "SF", "628": "SF", "650": "SF", "510": "OAK", "408": "SJ",
    "312": "CHI", "773": "CHI", "872": "CHI",
    "512": "AUS", "737": "AUS", "213": "LA", "310": "LA", "323": "LA", "424": "LA",
    "617": "BOS", "857": "BOS", "206": "SEA", "425": "SEA", "305": "MIA", "786": "MIA",
    "404": "ATL", "470": "ATL", "303": "DEN", "720": "DEN", "214": "DAL", "469": "DAL",
    "713": "HOU", "832": "HOU", "202": "DC", "215": "PHL", "267": "PHL", "602": "PHX",
    "503": "PDX", "612": "MSP", "416": "TOR", "647": "TOR", "604": "VAN",
}

# ITU-T E.164 country codes of one and two digits; every other one has three.
_SHORT_COUNTRY_CODES = frozenset(
    "1 7 20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 60 61 62 63 64 65 66 "
    "81 82 84 86 90 91 92 93 94 95 98".split()
)

_LABEL = re.compile(r"^\s*(?P<name>.+?)\s*(?:\((?P<paren>[^()]+)\)|[-–·|]\s*(?P<dash>[^-–·|]+))\s*$")


def city_of(phone: str) -> str:
    """CHI for +1 312 ..., else "+44" style country code for other numbers, "" when unknown."""
    digits = phone.lstrip("+")
    if phone.startswith("+1") and len(digits) == 11:
        area = digits[1:4]
        return AREA_CITIES.get(area, area)
    if not re.fullmatch(r"\+\d{4,15}", phone):
        return ""
    for size in (1, 2):  # country codes are prefix-free: the first that is one is the one
        if digits[:size] in _SHORT_COUNTRY_CODES:
            return "+" + digits[:size]
    return "+" + digits[:3]


def line_name(*, label: str, phone: str, kind: str = "") -> str:
    label = (label or "").strip()
    if label:
        match = _LABEL.match(label)
        if match:
            return f"{match.group('name')} · {(match.group('paren') or match.group('dash')).strip()}"
        city = city_of(phone)
        return f"{label} · {city}" if city and city not in label else label
    tail = re.sub(r"\D", "", phone)[-4:]
    kind_word = "SMS line" if kind == "sms" else "Line"
    city = city_of(phone)
    return f"{kind_word} …{tail}" + (f" · {city}" if city else "")
