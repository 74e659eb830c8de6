"""Failures, grouped like an error tracker: recorded from lindy.failures (every job that ends in an
exception), shown with the code of their frames beside the log of their latest example, triaged by
the analyst's model (route analyst.triage) and handed over as a ready-to-fix issue."""
