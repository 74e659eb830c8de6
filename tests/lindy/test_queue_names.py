"""Every task a service enqueues by name is registered once the apps are loaded, in any process
(a web process never imports tasks modules on its own)."""

import subprocess
import sys

NAMES = ["hydration.tasks.hydrate", "agent.tasks.agent_run", "channels_app.tasks.debounce_fire"]


def test_tasks_enqueued_by_name_are_registered_in_a_fresh_process():
    code = ("import django; django.setup(); from celery import current_app; "
            f"missing = [n for n in {NAMES!r} if n not in current_app.tasks]; print(missing); "
            "raise SystemExit(1 if missing else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={"DJANGO_SETTINGS_MODULE": "lindy.settings", "PATH": "/usr/bin:/bin"}, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
