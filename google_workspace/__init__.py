"""The user's one Google connection, below every app that reads their mail or acts in Google
(hydration's Gmail source, the agent's Gmail and Calendar actions, the drafting learner).

Public surface:

- `google_workspace.models` — `GmailAccount` (the tokens, encrypted; the granted scopes; the
  "act in Gmail / Calendar" switches) and `GmailOAuthState` (a one-time OAuth state).
- `google_workspace.oauth` — scopes per purpose, the consent URL, the code exchange, and
  `access_token(account)`, refreshed by google-auth; a grant Google refuses marks the account
  disconnected.
- `google_workspace.client` — `GoogleClient`, the one client for Gmail API reads: refresh once on
  a 401, `get`, `pages` (messages.list-style paging), errors as `GoogleError`.
- `google_workspace.messages` — a Gmail message payload's headers and body text.
- `google_workspace.services` — the writes: connect (state, code), turn actions off, disconnect.
- `google_workspace.errors` — `GoogleError` and `NotConnected`, the one "connect it first" error.

The pages that connect and disconnect stay at their URLs under /hydration/gmail/ (hydration's
memory page hosts the buttons); they call these services.
"""
