"""The apps' own settings: router, memory, validator and agent, drafting and its learner, email,
channels, hydration, failures."""

from lindy import env

from .core import VAR_DIR

# Router (model routing, rollouts, cost).
# Share of rollout calls whose request and answer are kept for the online judge.
ROUTER_ONLINE_EVAL_SAMPLE_RATE = env.number("ROUTER_ONLINE_EVAL_SAMPLE_RATE", 0.1, min=0, max=1)
# Samples the guardrail job sends to the judge route per run, per rollout.
ROUTER_ONLINE_EVAL_BATCH = env.integer("ROUTER_ONLINE_EVAL_BATCH", 20, min=1)
ROUTER_GUARDRAIL_EVERY_SECONDS = env.integer("ROUTER_GUARDRAIL_EVERY_SECONDS", 900, min=1)
# A running prompt optimization beats from a thread this often; a heartbeat older than the stale
# window means its worker died (a redelivery takes over, the recovery sweep queues it again). Worst
# case from a killed worker to its run queued again: stale + sweep period (45 s), under a minute.
ROUTER_OPTIMIZE_HEARTBEAT_SECONDS = env.number("ROUTER_OPTIMIZE_HEARTBEAT_SECONDS", 10, min=0, min_inclusive=False)
ROUTER_OPTIMIZE_STALE_SECONDS = env.number("ROUTER_OPTIMIZE_STALE_SECONDS", 30, min=0, min_inclusive=False)
ROUTER_OPTIMIZE_RECOVER_EVERY_SECONDS = env.integer("ROUTER_OPTIMIZE_RECOVER_EVERY_SECONDS", 15, min=1)
ROUTER_OPTIMIZE_MAX_ATTEMPTS = env.integer("ROUTER_OPTIMIZE_MAX_ATTEMPTS", 3, min=1)
# The guardrail aggregates count only calls this recent (a rollout's stage lasts hours to days).
ROUTER_GUARDRAIL_WINDOW_DAYS = env.integer("ROUTER_GUARDRAIL_WINDOW_DAYS", 30, min=1)
# The guardrails' always-valid sequential test (router.sequential): the sample size per look
# where it is tightest, and the p-value below which a sample-ratio mismatch flags bucketing.
ROUTER_GUARDRAIL_SEQUENTIAL_TUNING = env.number("ROUTER_GUARDRAIL_SEQUENTIAL_TUNING", 500, min=0, min_inclusive=False)
ROUTER_GUARDRAIL_SRM_P = env.number("ROUTER_GUARDRAIL_SRM_P", 0.001, min=0, max=1, min_inclusive=False)
# Voice memos on a route whose target takes no audio use this OpenAI-compatible target (by name);
# empty: the first OpenAI-compatible target whose model is a speech model (router.gateway.speech_target).
ROUTER_SPEECH_TARGET = env.text("ROUTER_SPEECH_TARGET", "")
# Offline evidence before a rollout starts (router.services.evidence): the candidate's latest
# finished eval of the route must score at least this, with at most this share of errored cases,
# and be no worse than the baseline's latest eval by more than the margin.
ROUTER_EVAL_MIN_SCORE = env.number("ROUTER_EVAL_MIN_SCORE", 0.75, min=0, max=1)
ROUTER_EVAL_MAX_ERROR_RATE = env.number("ROUTER_EVAL_MAX_ERROR_RATE", 0.0, min=0, max=1)
ROUTER_EVAL_BASELINE_MARGIN = env.number("ROUTER_EVAL_BASELINE_MARGIN", 0.02, min=0, max=1)
# Provider budgets (router.budgets), shared by all workers through Redis: requests and tokens
# per minute per provider (by host name, else provider kind; "default" for the rest). Generous
# defaults; set a provider's to its account's real limits. The offline provider is unlimited.
ROUTER_PROVIDER_BUDGETS: dict[str, dict[str, int]] = {
    "default": {"rpm": env.integer("ROUTER_DEFAULT_RPM", 4000, min=0),
                "tpm": env.integer("ROUTER_DEFAULT_TPM", 2_000_000, min=0)},
}
# Calls in flight per route (0 or absent: no limit), and when a killed worker's slot frees itself.
ROUTER_ROUTE_CONCURRENCY: dict[str, int] = {}
ROUTER_ROUTE_SLOT_EXPIRY_SECONDS = env.integer("ROUTER_ROUTE_SLOT_EXPIRY_SECONDS", 600, min=1)
# An interactive call (agent, validator) waits this long for budget, then fails with a ModelError.
ROUTER_BUDGET_INTERACTIVE_WAIT_SECONDS = env.number("ROUTER_BUDGET_INTERACTIVE_WAIT_SECONDS", 3, min=0)

# memory: default token budgets of a new file system (each file system can change its own).
# Per file: every file but index.md and master.md. Always loaded: index.md + master.md together.
MEMORY_FILE_TOKEN_BUDGET = env.integer("MEMORY_FILE_TOKEN_BUDGET", 8_000, min=1)
MEMORY_ALWAYS_LOADED_TOKEN_BUDGET = env.integer("MEMORY_ALWAYS_LOADED_TOKEN_BUDGET", 24_000, min=1)

# validator (and the agent loop in lindy/agent.py)
# A user's messages on one channel conversation feed the same task until it has been idle this long.
LINDY_AGENT_CONVERSATION_IDLE_HOURS = env.integer("LINDY_AGENT_CONVERSATION_IDLE_HOURS", 12, min=1)
# Photos the user texted in this many days (the newest LIMIT of them) are shown to the model on
# every run, so "the receipt I sent Monday" can be looked at after the conversation's task changed.
LINDY_AGENT_PHOTO_DAYS = env.integer("LINDY_AGENT_PHOTO_DAYS", 14, min=0)
LINDY_AGENT_PHOTO_LIMIT = env.integer("LINDY_AGENT_PHOTO_LIMIT", 4, min=0)

# drafting's learner (drafting/learner): the adaptive cadence and the gate.
# A user's run fires when they have this many new meaningful draft/sent pairs (checked hourly)...
LINDY_LEARNER_PAIRS_PER_RUN = env.integer("LINDY_LEARNER_PAIRS_PER_RUN", 4, min=1)
# ...or, with at least one, once this many hours passed since their last run (the floor)...
LINDY_LEARNER_FLOOR_HOURS = env.integer("LINDY_LEARNER_FLOOR_HOURS", 24, min=1)
# ...and never more than this many runs in 24 hours (the ceiling).
LINDY_LEARNER_MAX_RUNS_PER_DAY = env.integer("LINDY_LEARNER_MAX_RUNS_PER_DAY", 3, min=0)
# The gate: one-sided sign test at this alpha, on at least this many decided comparisons.
LINDY_LEARNER_ALPHA = env.number("LINDY_LEARNER_ALPHA", 0.1, min=0, max=1, min_inclusive=False)
LINDY_LEARNER_MIN_DECIDED = env.integer("LINDY_LEARNER_MIN_DECIDED", 5, min=1)
# Held-out pairs (or historical threads) replayed and judged per proposal; new pairs read per run.
LINDY_LEARNER_EVAL_PAIRS = env.integer("LINDY_LEARNER_EVAL_PAIRS", 30, min=1)
LINDY_LEARNER_MAX_NEW_PAIRS = env.integer("LINDY_LEARNER_MAX_NEW_PAIRS", 24, min=1)

# Email (ratio alerts to support): SMTP when EMAIL_HOST is set, else printed to the console.
EMAIL_HOST = env.text("EMAIL_HOST")
EMAIL_PORT = env.integer("EMAIL_PORT", 587, min=1, max=65535)
EMAIL_HOST_USER = env.text("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env.text("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env.flag("EMAIL_USE_TLS", True)
EMAIL_BACKEND = env.dotted_path("EMAIL_BACKEND", "") or (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend"
)
DEFAULT_FROM_EMAIL = env.text("DEFAULT_FROM_EMAIL", "Lindy <lindy@localhost>")

# --- channels_app: Slack, iMessage (managed API) and SMS ---------------------------------------
# An integration whose secret is unset rejects every request to its endpoint.
SLACK_SIGNING_SECRET = env.text("SLACK_SIGNING_SECRET")
SLACK_CLIENT_ID = env.text("SLACK_CLIENT_ID")
SLACK_CLIENT_SECRET = env.text("SLACK_CLIENT_SECRET")
SLACK_API_BASE_URL = env.url("SLACK_API_BASE_URL", "https://slack.com/api/")
# Seconds any Slack Web API call may take (lindy.slack_client.web_client: channels, hydration, tools).
SLACK_HTTP_TIMEOUT = env.number("SLACK_HTTP_TIMEOUT", 15, min=0, min_inclusive=False)
SLACK_AUTHORIZE_URL = env.url("SLACK_AUTHORIZE_URL", "https://slack.com/oauth/v2/authorize")
SLACK_BOT_SCOPES = env.text_list(
    "SLACK_BOT_SCOPES", "channels:read,groups:read,channels:history,groups:history,users:read,users:read.email"
)
LINQ_API_TOKEN = env.text("LINQ_API_TOKEN")
LINQ_WEBHOOK_SECRET = env.text("LINQ_WEBHOOK_SECRET")
# How the provider signs its webhooks: "hmac" (X-Webhook-Timestamp/-Signature, hex HMAC-SHA256) or
# "standard" (Standard Webhooks: webhook-id/-timestamp/-signature, LINQ_WEBHOOK_SECRET = "whsec_...").
LINQ_WEBHOOK_SCHEME = env.choice("LINQ_WEBHOOK_SCHEME", "hmac", ("hmac", "standard"))
LINQ_BASE_URL = env.url("LINQ_BASE_URL", "https://api.linqapp.com/api/partner")
LINQ_TIMEOUT = env.number("LINQ_TIMEOUT", 10, min=0, min_inclusive=False)
TWILIO_ACCOUNT_SID = env.text("TWILIO_ACCOUNT_SID")
TWILIO_AUTH_TOKEN = env.text("TWILIO_AUTH_TOKEN")
TWILIO_API_BASE_URL = env.url("TWILIO_API_BASE_URL", "")  # empty: Twilio's own hosts
# Behind a proxy Twilio signs the public URL it called: set this to that URL's origin.
TWILIO_WEBHOOK_PUBLIC_BASE = env.url("TWILIO_WEBHOOK_PUBLIC_BASE", "")
WEBHOOK_MAX_AGE_SECONDS = env.integer("WEBHOOK_MAX_AGE_SECONDS", 300, min=1)
CHANNELS_DEBOUNCE_SECONDS = env.number("CHANNELS_DEBOUNCE_SECONDS", 3, min=0)
# A claimed bundle whose dispatch has not finished after this long is handed out again.
CHANNELS_DISPATCH_LEASE_SECONDS = env.integer("CHANNELS_DISPATCH_LEASE_SECONDS", 600, min=1)
CHANNELS_RATIO_WARN = env.number("CHANNELS_RATIO_WARN", 2, min=0, min_inclusive=False)
CHANNELS_RATIO_CRITICAL = env.number("CHANNELS_RATIO_CRITICAL", 10, min=0, min_inclusive=False)
# A send within this many seconds of the user's last text is a reply: it goes even from a line over
# the critical ratio (channels_app.services.gate); anything later is unprompted.
CHANNELS_REPLY_WINDOW_SECONDS = env.integer("CHANNELS_REPLY_WINDOW_SECONDS", 1800, min=0)
# Ratio alerts are emailed to support staff (users with is_support) and these addresses, and posted
# to this Slack channel with this bot token (an ops workspace's; both unset: no Slack post).
CHANNELS_ALERT_EMAILS = env.text_list("CHANNELS_ALERT_EMAILS")
CHANNELS_ALERT_SLACK_TOKEN = env.text("CHANNELS_ALERT_SLACK_TOKEN")
CHANNELS_ALERT_SLACK_CHANNEL = env.text("CHANNELS_ALERT_SLACK_CHANNEL")
CHANNELS_CAPABILITY_TTL_DAYS = env.integer("CHANNELS_CAPABILITY_TTL_DAYS", 7, min=1)
CHANNELS_MEDIA_ROOT = env.path("CHANNELS_MEDIA_ROOT", VAR_DIR / "media" / "channels")
CHANNELS_MAX_ATTACHMENT_BYTES = env.integer("CHANNELS_MAX_ATTACHMENT_BYTES", 20 * 1024 * 1024, min=1)

# --- hydration: sources, summarizer and memory agent, every 12 hours ------------------------------
HYDRATION_INTERVAL_SECONDS = env.integer("HYDRATION_INTERVAL_SECONDS", 12 * 3600, min=60)
# A live run whose worker stops renewing this lease is considered dead; keep it above the task's time limit.
HYDRATION_RUN_LEASE_SECONDS = env.integer("HYDRATION_RUN_LEASE_SECONDS", 1800, min=1)
HYDRATION_SUMMARIZER_INPUT_TOKENS = env.integer("HYDRATION_SUMMARIZER_INPUT_TOKENS", 150_000, min=1000)
HYDRATION_MAX_ITEMS_PER_RUN = env.integer("HYDRATION_MAX_ITEMS_PER_RUN", 2000, min=1)
HYDRATION_AGENT_MAX_STEPS = env.integer("HYDRATION_AGENT_MAX_STEPS", 40, min=1)
HYDRATION_VERIFIER_ROUNDS = env.integer("HYDRATION_VERIFIER_ROUNDS", 3, min=1)
# An item a passing memory agent wrote none of the facts of is kept for the next run; left out this
# many runs, it is dropped (saying so), so no item is retried forever.
HYDRATION_ITEM_MAX_TRIES = env.integer("HYDRATION_ITEM_MAX_TRIES", 3, min=1)
# A running run's worker refreshes its heartbeat this often (a thread, so even a long model call
# beats); a heartbeat older than the stale window means the worker is dead: a redelivery takes the
# run over at once, and the recovery sweep (hydration.tasks.recover) queues it again. The worst
# case from a killed worker to its run queued again is stale + sweep period (45 s): keep it under
# the minute the issue promises, and the stale window at three beats or more.
HYDRATION_HEARTBEAT_SECONDS = env.number("HYDRATION_HEARTBEAT_SECONDS", 10, min=0, min_inclusive=False)
HYDRATION_HEARTBEAT_STALE_SECONDS = env.number("HYDRATION_HEARTBEAT_STALE_SECONDS", 30, min=0, min_inclusive=False)
HYDRATION_RECOVER_EVERY_SECONDS = env.integer("HYDRATION_RECOVER_EVERY_SECONDS", 15, min=1)
# The dispatch tick: rows claimed per transaction, and at most this many batches per tick
# (1,000 × 50 per minute is far above the ~23 runs/s of 1,000,000 file systems every 12 h).
HYDRATION_DISPATCH_BATCH = env.integer("HYDRATION_DISPATCH_BATCH", 1000, min=1)
HYDRATION_DISPATCH_MAX_BATCHES = env.integer("HYDRATION_DISPATCH_MAX_BATCHES", 50, min=1)
# A run taken over this many times (its worker died each time) is given up; its items stay for the next run.
HYDRATION_RUN_MAX_ATTEMPTS = env.integer("HYDRATION_RUN_MAX_ATTEMPTS", 3, min=1)
# Gmail calls (Slack calls use SLACK_HTTP_TIMEOUT).
HYDRATION_HTTP_TIMEOUT = env.number("HYDRATION_HTTP_TIMEOUT", 20, min=0, min_inclusive=False)
HYDRATION_SLACK_MAX_RETRIES = env.integer("HYDRATION_SLACK_MAX_RETRIES", 3, min=0)
GMAIL_CLIENT_ID = env.text("GMAIL_CLIENT_ID")
GMAIL_CLIENT_SECRET = env.text("GMAIL_CLIENT_SECRET")
GMAIL_API_BASE_URL = env.url("GMAIL_API_BASE_URL", "https://gmail.googleapis.com")
GOOGLE_OAUTH_AUTHORIZE_URL = env.url("GOOGLE_OAUTH_AUTHORIZE_URL", "https://accounts.google.com/o/oauth2/v2/auth")
GOOGLE_OAUTH_TOKEN_URL = env.url("GOOGLE_OAUTH_TOKEN_URL", "https://oauth2.googleapis.com/token")

# How many cells of a validator eval matrix run at once (each makes one model call per case).
VALIDATOR_EVAL_CONCURRENCY = env.integer("VALIDATOR_EVAL_CONCURRENCY", 2, min=1)
# Validator V2: the verdict also assesses quality (advisory; it never flips a safety block).
VALIDATOR_QUALITY = env.flag("VALIDATOR_QUALITY", True)
# Block-rate anomalies (validator.anomalies): the hourly job's window, trailing baseline and the
# per-test false-alarm rate of its one-sided exact binomial test.
VALIDATOR_ANOMALY_WINDOW_HOURS = env.integer("VALIDATOR_ANOMALY_WINDOW_HOURS", 1, min=1)
VALIDATOR_ANOMALY_BASELINE_HOURS = env.integer("VALIDATOR_ANOMALY_BASELINE_HOURS", 168, min=1)
VALIDATOR_ANOMALY_ALPHA = env.number("VALIDATOR_ANOMALY_ALPHA", 1e-6, min=0, max=1, min_inclusive=False)
GOOGLE_CALENDAR_API_BASE_URL = env.url("GOOGLE_CALENDAR_API_BASE_URL", "https://www.googleapis.com")
# Live Gmail/Calendar actions: each HTTP call's timeout, and the time one action may spend retrying
# 429/5xx answers (honouring Retry-After) before it is left "not confirmed" for the resume sweep.
LINDY_ACTION_HTTP_TIMEOUT = env.number("LINDY_ACTION_HTTP_TIMEOUT", 20, min=0, min_inclusive=False)
LINDY_ACTION_RETRY_BUDGET_SECONDS = env.number("LINDY_ACTION_RETRY_BUDGET_SECONDS", 30, min=0)
LINDY_ACTION_MAX_TRIES = env.integer("LINDY_ACTION_MAX_TRIES", 5, min=1)
# A live action still "not confirmed" this long after its last attempt is resumed (checked with the
# provider first, then done) by agent.tasks.outbox_resume.
LINDY_ACTION_RESUME_AFTER_SECONDS = env.integer("LINDY_ACTION_RESUME_AFTER_SECONDS", 300, min=1)
# ... and one still not confirmed this long after it was asked for is only looked for, never done.
LINDY_ACTION_GIVE_UP_HOURS = env.integer("LINDY_ACTION_GIVE_UP_HOURS", 24, min=1)

# Email drafting (drafting/). A draft-sent pair below the heavy-edit threshold was heavily edited;
# below the (looser) meaningful threshold it differs enough to learn from. Inbound mail older
# than the lookback (e.g. a first hydration's backlog) gets no draft.
LINDY_DRAFTING_ENABLED = env.flag("LINDY_DRAFTING_ENABLED", True)
LINDY_DRAFT_HEAVY_EDIT_THRESHOLD = env.number("LINDY_DRAFT_HEAVY_EDIT_THRESHOLD", 0.7, min=0, max=1)
LINDY_DRAFT_MEANINGFUL_THRESHOLD = env.number("LINDY_DRAFT_MEANINGFUL_THRESHOLD", 0.95, min=0, max=1)
LINDY_DRAFT_LOOKBACK_HOURS = env.integer("LINDY_DRAFT_LOOKBACK_HOURS", 48, min=1)
LINDY_DRAFT_SWEEP_SECONDS = env.integer("LINDY_DRAFT_SWEEP_SECONDS", 900, min=1)

# Failures (lindy.failures, grouped by the analyst). The version a failure is seen in: LINDY_VERSION
# when set, else the git commit of the running code, else the release string.
LINDY_VERSION = env.text("LINDY_VERSION", "")
LINDY_RELEASE = env.text("LINDY_RELEASE", "lindy-dev")
# A new or regressed failure group that hits more than this many users in an hour alerts (once per episode).
ANALYST_FAILURE_ALERT_USERS = env.integer("ANALYST_FAILURE_ALERT_USERS", 3, min=0)
# "File issue" on a failure group: the repository (owner/name) and a token that may create issues.
ANALYST_GITHUB_REPO = env.text("ANALYST_GITHUB_REPO", "")
ANALYST_GITHUB_TOKEN = env.text("ANALYST_GITHUB_TOKEN", "")
ANALYST_GITHUB_API_URL = env.url("ANALYST_GITHUB_API_URL", "https://api.github.com")
