"""Watching runs, wherever they ran: the status vocabulary both executors report in (job_status), log lines, metric series by SageMaker's rules, progress and cost so far,
why a job failed (root_cause: the failing rank's own error, classified with a fix), the one name of each signal
(signal_names), charts, and a search's trials ranked. Below both executors (the emulator and the cloud feed it) and beside
planning, which it never imports: planning says what will run, observing reads what did."""
