#!/usr/bin/env bash
# cheatsheet.sh PID — the playbook's "run these first" commands (its general check-up list),
# as a person or an agent would run them by hand on PID. The baseline sopctl is compared with.
# (py-spy is not installable here; the rest is verbatim, with grep for rg.)
pid=$1
free -g
vmstat 1 5
top -b -n 1 | head -30
grep -iE "Vm|Threads" /proc/$pid/status
cat /proc/$pid/io
iostat -xm 1 3
dmesg -T | grep -iE "oom|killed|fault" | tail -30
