#!/bin/sh
# Open MPI's remote shell for emulated hosts (--mca plm_rsh_agent). Open MPI calls it as it would call ssh:
# `agent.sh [options] <host> <command>`. It runs the command on this machine, in that host's directory and
# environment, as a SageMaker worker's sshd gives its shells the worker's /etc/environment.
while [ $# -gt 0 ]; do
    case "$1" in
        -*) shift ;;
        *) break ;;
    esac
done
host="$1"
shift
. "$SMTRAIN_RUN_DIR/$host/.smtrain-environment" || exit 1
cd "$SMTRAIN_RUN_DIR/$host/code" || exit 1
exec /bin/sh -c "$*"
