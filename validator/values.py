"""Values, not strings: the addresses, links, phone numbers, account numbers and amounts in a
piece of text, each parsed by a well-kept library and reduced to one comparable key.

"'jane@initech.test'", "<jane@initech.test>", "mailto:Jane@Initech.test." and "jane@initech.test"
are one address; "#general" and "general" are one channel; "(+1) 327-420-4923" and
"+13274204923" one phone number. Quotes, brackets, trailing punctuation, `mailto:` and a leading
`#` never change a value. Nothing here touches the network: email-validator runs without DNS,
tldextract reads the suffix list bundled with it, urlextract the TLD list bundled with it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from email.utils import getaddresses
from functools import lru_cache
from urllib.parse import urlsplit

import email_validator
import phonenumbers
import tldextract
from price_parser import Price
from stdnum import iban, luhn
from urlextract import URLExtract  # type: ignore[import-untyped]

EMAIL, URL, DOMAIN, PHONE, IBAN, ACCOUNT, AMOUNT = "email", "url", "domain", "phone", "iban", "account", "amount"
KIND_WORDS = {EMAIL: "address", URL: "link", DOMAIN: "domain", PHONE: "phone number", IBAN: "IBAN",
              ACCOUNT: "account number", AMOUNT: "amount"}

# What wraps a value without being part of it.
_WRAPPERS = "\"'`“”‘’«»()[]{}<>*_"
_TRAILING = ".,;:!?"
# Names reserved for examples and tests (RFC 2606/6761): real TLD lists leave them out, mail
# and links in tests and demos use them.
RESERVED_TLDS = ("test", "example", "invalid", "localhost")
PHONE_REGION = "US"


def clean(text: str) -> str:
    """The value inside its wrapping: quotes, brackets, trailing punctuation and `mailto:` off."""
    value = unicodedata.normalize("NFKC", str(text or "")).strip()
    previous = None
    while value != previous:
        previous = value
        value = value.strip().strip(_WRAPPERS).rstrip(_TRAILING).strip()
        if value[:7].casefold() == "mailto:":
            value = value[7:]
    return value


def email_key(text: str) -> str:
    """The address in `text` ("Jane <jane@x.test>", "'jane@x.test'", "mailto:jane@x.test"),
    case-folded, or "" when it is not one valid address (syntax only, no DNS)."""
    raw = unicodedata.normalize("NFKC", str(text or "")).strip()
    cleaned = clean(raw)
    # "Jane Park" <jane@x.test> is a display name and an address; 'jane@x.test' only an address.
    pairs = [address for _, address in getaddresses([raw.rstrip(_TRAILING) if "<" in raw else cleaned]) if address]
    if len(pairs) != 1:
        pairs = [address for _, address in getaddresses([cleaned]) if address]
    if len(pairs) != 1:
        return ""
    try:
        checked = email_validator.validate_email(clean(pairs[0]), check_deliverability=False,
                                                 test_environment=True)
    except email_validator.EmailNotValidError:
        return ""
    return checked.normalized.casefold()


def channel_key(text: str) -> str:
    """A Slack channel as one key: "#General", "general" and "“#general”" are one channel."""
    return clean(text).lstrip("#").strip().casefold()


@dataclass(frozen=True)
class Value:
    kind: str  # EMAIL, URL, DOMAIN, PHONE, IBAN, ACCOUNT or AMOUNT
    text: str  # as written
    key: str  # what is compared: the same value written another way has the same key
    start: int = 0  # where it was written in the text it was read from
    end: int = 0

    @property
    def words(self) -> str:
        return KIND_WORDS.get(self.kind, self.kind)


def _tokens(text: str):
    for match in re.finditer(r"\S+", text):
        yield match.start(), match.end(), match.group(0)


def emails_in(text: str) -> list[Value]:
    found = []
    for start, end, token in _tokens(text):
        if "@" not in token:
            continue
        for piece in re.split(r"[,;]", token):
            # A possessive is not part of the address: "jane@x.test's last email".
            piece = re.sub(r"['’]s\W*$", "", piece)
            key = email_key(piece)
            if key:
                found.append(Value(EMAIL, clean(piece), key, start, end))
    return found


class _Links(URLExtract):
    """urlextract with its bundled TLD list (no update from the network) plus the reserved names."""

    def _load_cached_tlds(self):
        return set(super()._load_cached_tlds()) | {"." + tld for tld in RESERVED_TLDS}


@lru_cache(maxsize=1)
def _links() -> URLExtract:
    return _Links(extract_email=False, cache_dns=False)


@lru_cache(maxsize=1)
def _suffixes() -> tldextract.TLDExtract:
    # suffix_list_urls=(): the snapshot bundled with tldextract; nothing is fetched, nothing cached.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def registered_domain(host: str) -> str:
    """"www.login.evil.co.uk" -> "evil.co.uk"; a reserved name keeps its last two labels."""
    host = host.casefold().strip(".")
    parts = _suffixes()(host)
    if parts.suffix and parts.domain:
        return f"{parts.domain}.{parts.suffix}"
    labels = host.split(".")
    return ".".join(labels[-2:]) if len(labels) >= 2 else host


def url_key(text: str) -> str:
    """A link as one key: scheme, `www.`, case of the host and a trailing slash don't matter."""
    cleaned = clean(text)
    parts = urlsplit(cleaned if "://" in cleaned else "http://" + cleaned)
    host = (parts.hostname or "").casefold()
    if host.startswith("www."):
        host = host[4:]
    path = parts.path.rstrip("/")
    return host + path + (f"?{parts.query}" if parts.query else "")


def urls_in(text: str) -> list[Value]:
    found = []
    for link, (start, end) in _links().find_urls(text, get_indices=True):
        if "@" in link and "/" not in link:
            continue  # an email address, read as such
        found.append(Value(URL, clean(link), url_key(link), start, end))
    return found


def phones_in(text: str) -> list[Value]:
    found = []
    for match in phonenumbers.PhoneNumberMatcher(text, PHONE_REGION, leniency=phonenumbers.Leniency.VALID):
        key = phonenumbers.format_number(match.number, phonenumbers.PhoneNumberFormat.E164)
        found.append(Value(PHONE, match.raw_string, key, match.start, match.end))
    return found


def ibans_in(text: str) -> list[Value]:
    """IBANs, written grouped ("DE89 3704 0044 …") or not, validated by their checksum."""
    found = []
    for match in re.finditer(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{1,4}){3,8}\b", text, re.I):
        if iban.is_valid(match.group(0)):
            found.append(Value(IBAN, match.group(0), iban.compact(match.group(0)), match.start(), match.end()))
    return found


def accounts_in(text: str, taken=()) -> list[Value]:
    """Account, card and id numbers: runs of 6 or more digits (separators allowed), or letters and
    digits mixed ("HGK137803"), outside what was already read as another value."""
    found = []
    for match in re.finditer(r"(?<![\w@./-])(?=[\w-]*\d)[A-Z0-9](?:[A-Z0-9]|[ -](?=\d)){5,30}(?![\w@-])", text, re.I):
        start, end = match.start(), match.end()
        if any(s < end and start < e for s, e in taken):
            continue
        raw = match.group(0)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}|\d{2}-\d{2}-\d{4}", raw):
            continue  # a date
        digits = re.sub(r"[ -]", "", raw)
        if sum(ch.isdigit() for ch in digits) < 6 and not (luhn.is_valid(digits) if digits.isdigit() else False):
            continue
        found.append(Value(ACCOUNT, raw, digits.upper(), start, end))
    return found


# Where an amount may be written: a currency sign, code or word next to a number. Unambiguous money
# only: "5k", "1.200,50" and a bare "480" are not read as an amount.
SYMBOLS = {"$": "USD", "us$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "chf": "CHF"}
CODES = ("usd", "eur", "gbp", "chf", "cad", "aud", "jpy")
CURRENCY_WORDS = {"dollars": "USD", "dollar": "USD", "euros": "EUR", "euro": "EUR", "pounds": "GBP"}
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_END = r"(?!\w|[.,]\d)"
_SYMBOL = "|".join(re.escape(s) for s in sorted(SYMBOLS, key=len, reverse=True))
_CODE = "|".join(CODES)
_WORD = "|".join(sorted(CURRENCY_WORDS, key=len, reverse=True))
_AMOUNT_SPANS = re.compile(
    rf"(?<!\w)(?:(?P<sym>{_SYMBOL}|{_CODE})\s?(?P<n1>{_NUM}){_END}"
    rf"|(?P<n2>{_NUM}){_END}\s?(?P<code>{_CODE}|{_WORD})(?!\w))", re.I)


@dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str
    start: int = 0
    end: int = 0


def money_in(text: str) -> list[Money]:
    """The amounts with a currency: "$480", "480 usd", "€1,200.50", "eur 90". The span is found
    next to its currency; price-parser reads the number (thousands and decimal separators)."""
    found = []
    for match in _AMOUNT_SPANS.finditer(text):
        unit = (match.group("sym") or match.group("code")).casefold()
        currency = SYMBOLS.get(unit) or CURRENCY_WORDS.get(unit) or unit.upper()
        number = match.group("n1") or match.group("n2")
        price = Price.fromstring(number, decimal_separator=".")
        try:
            amount = Decimal(price.amount) if price.amount is not None else Decimal(number.replace(",", ""))
        except InvalidOperation:
            continue
        found.append(Money(amount, currency, match.start(), match.end()))
    return found


def amounts_in(text: str) -> list[Value]:
    return [Value(AMOUNT, text[m.start:m.end], f"{m.amount.normalize():f} {m.currency}", m.start, m.end)
            for m in money_in(text)]


def values_in(text: str) -> list[Value]:
    """Every value written in `text`, each once, in the order written."""
    text = unicodedata.normalize("NFKC", text or "")
    found = emails_in(text) + ibans_in(text) + amounts_in(text)
    found += [v for v in urls_in(text) if not any(v.start < e.end and e.start < v.end for e in found)]
    found += [v for v in phones_in(text) if not any(v.start < e.end and e.start < v.end for e in found)]
    found += accounts_in(text, taken=[(v.start, v.end) for v in found])
    return sorted(found, key=lambda v: v.start)


@lru_cache(maxsize=4096)
def keys_in(text: str) -> frozenset[tuple[str, str]]:
    """(kind, key) of every value in `text`. A phone number also reads as the digits it is."""
    keys: set[tuple[str, str]] = set()
    for value in values_in(text):
        keys.add((value.kind, value.key))
        if value.kind == PHONE:
            keys.add((ACCOUNT, re.sub(r"\D", "", value.text)))
        if value.kind == URL:
            keys.add((DOMAIN, registered_domain(urlsplit("http://" + value.key).hostname or "")))
        if value.kind == EMAIL:
            keys.add((DOMAIN, registered_domain(value.key.rsplit("@", 1)[1])))
    return frozenset(keys)
