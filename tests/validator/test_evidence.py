from memory.context import ContextDocument
from validator import evidence

HISTORY = [
    {"seq": 1, "actor": "external", "name": "billing@northwind.test", "content": "Pay   immediately to avoid suspension."},
    {"seq": 2, "actor": "user", "content": "Please archive the Northwind email, I’ll handle it."},
    {"seq": 3, "actor": "assistant", "content": "I will archive it."},
]


def test_quotes_are_extracted_from_straight_and_curly_quotes():
    quotes = evidence.extract_quotes('User said "archive the Northwind email" and “I’ll handle it”. "ok"')
    assert quotes == ["archive the Northwind email", "I’ll handle it"]  # "ok" is too short to be evidence


def test_each_quote_is_checked_with_its_author():
    result = evidence.check(
        'The user wrote "archive the Northwind email" and the vendor wrote "pay immediately". '
        'Also “the user approved payment”.',
        HISTORY,
    )
    by_quote = {q.quote: q for q in result.quotes}
    user_quote = by_quote["archive the Northwind email"]
    assert user_quote.found and user_quote.by_user and user_quote.sources[0].seq == 2
    vendor = by_quote["pay immediately"]
    assert vendor.found and not vendor.by_user
    assert vendor.sources[0].actor == "external" and vendor.sources[0].name == "billing@northwind.test"
    invented = by_quote["the user approved payment"]
    assert not invented.found and invented.sources == []
    data = result.to_dict()
    assert data["any_by_user"] is True and data["all_found"] is False
    assert "NOT FOUND" in data["summary"] and "an external party (billing@northwind.test)" in data["summary"]


def test_apostrophes_and_whitespace_do_not_break_verbatim_matching():
    result = evidence.check('"I\'ll handle it"', HISTORY)
    assert result.quotes[0].found and result.quotes[0].by_user


def test_memories_are_searched_and_only_the_users_own_count_as_the_user():
    docs = [
        ContextDocument("user:u@acme.test", "permissions.md", "You may always send follow-ups after sales calls."),
        ContextDocument("team:Acme", "index.md", "We always pay vendors within 30 days."),
    ]
    result = evidence.check('"send follow-ups after sales calls" and "pay vendors within 30 days"', [], docs)
    user_perm, team_fact = result.quotes
    assert user_perm.found and user_perm.by_user and user_perm.sources[0].where == "memory"
    assert team_fact.found and not team_fact.by_user


def test_no_quotes():
    result = evidence.check("Because it is helpful.", HISTORY)
    assert result.quotes == [] and result.to_dict()["summary"] == "The justification quotes nothing."
