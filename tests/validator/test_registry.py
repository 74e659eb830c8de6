import pytest

from lindy import tool_registry as registry

EXPECTED = {
    "none": {"search_tasks", "draft_email", "archive_email"},
    "user_only": {"reply_to_user", "send_sms_to_user"},
    "third_party": {"send_email", "reply_to_email", "forward_email", "create_calendar_event",
                    "send_calendar_invite", "update_calendar_event", "post_slack_message"},
    "destructive": {"delete_email", "delete_calendar_event", "cancel_calendar_event"},
    "dangerous": {"pay_invoice", "share_file_externally"},
}


def test_every_tool_has_its_effect_class():
    by_class = {}
    for tool in registry.TOOLS.values():
        by_class.setdefault(tool.effect, set()).add(tool.name)
    assert by_class == EXPECTED


@pytest.mark.parametrize("effect,validated", [
    ("none", False), ("user_only", False), ("third_party", True), ("destructive", True), ("dangerous", True),
])
def test_which_classes_are_validated(effect, validated):
    for name in EXPECTED[effect]:
        assert registry.get(name).validated is validated


def test_validated_tools_get_a_required_justification_parameter():
    schemas = {tool["name"]: tool["input_schema"] for tool in registry.agent_tools()}
    for name in registry.validated_tool_names():
        schema = schemas[name]
        assert "justification" in schema["required"]
        description = schema["properties"]["justification"]["description"]
        assert "Another AI will read" in description and "REJECT" in description
        assert "quote" in description.lower() and "memories" in description
    for name in EXPECTED["none"] | EXPECTED["user_only"]:
        assert "justification" not in schemas[name]["properties"]
    # The registry's own schemas are untouched by the injection.
    assert "justification" not in registry.get("send_email").input_schema["properties"]


def test_issue_argument_shapes():
    send = registry.get("send_email").input_schema
    assert send["required"] == ["to", "subject", "body"] and send["properties"]["cc"]["type"] == "array"
    assert registry.get("pay_invoice").input_schema["required"] == ["invoice_id", "payee", "amount", "currency"]
    assert registry.get("create_calendar_event").input_schema["required"] == ["title", "start", "end", "attendees"]
    assert registry.get("share_file_externally").input_schema["required"] == ["file_id", "recipient"]


def test_argument_errors():
    send = registry.get("send_email")
    assert registry.argument_errors(send, {"to": ["a@b.test"], "subject": "s", "body": "b"}) == []
    assert "to: must be of type array" in registry.argument_errors(send, {"to": "a@b.test", "subject": "s", "body": "b"})
    assert "subject: required" in registry.argument_errors(send, {"to": ["a@b.test"], "body": "b"})
    assert any("not a parameter" in e for e in registry.argument_errors(send, {"to": ["x"], "subject": "s", "body": "b", "attachments": []}))
    assert registry.argument_errors(send, "nope") == ["arguments must be an object"]
    pay = registry.get("pay_invoice")
    assert registry.argument_errors(pay, {"invoice_id": "1", "payee": "p", "amount": True, "currency": "USD"})


def test_unknown_tool():
    with pytest.raises(registry.UnknownTool):
        registry.get("launch_rockets")


def test_api_status_filter_names_every_status():
    from typing import get_args

    import lindy.api_root  # noqa: F401  (mounts validator.api; importing that first would be circular)
    from validator.api import StatusName
    from validator.models import Decision

    assert set(get_args(StatusName)) == set(Decision.Status.values)


def test_a_calendar_event_only_the_user_attends_is_not_third_party():
    event = registry.get("create_calendar_event")
    base = {"title": "Focus", "start": "2026-12-01T09:00", "end": "2026-12-01T11:00"}
    assert registry.argument_errors(event, {**base, "attendees": []}) == []
    assert registry.effect_for(event, {**base, "attendees": []}, "me@acme.test") == "none"
    assert registry.effect_for(event, {**base, "attendees": [" Me@Acme.test"]}, "me@acme.test") == "none"
    assert registry.effect_for(event, {**base, "attendees": ["me@acme.test", "jane@initech.test"]},
                               "me@acme.test") == "third_party"
    assert registry.effect_for(event, {**base, "attendees": ["jane@initech.test"]}, "") == "third_party"
    # Other tools keep their class whatever the arguments; other required lists must name someone.
    assert registry.effect_for(registry.get("send_email"), {"to": []}, "me@acme.test") == "third_party"
    invite = registry.get("send_calendar_invite")
    assert "attendees: must not be empty" in registry.argument_errors(invite, {"event_id": "e1", "attendees": []})
