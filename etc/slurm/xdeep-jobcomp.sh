#!/bin/sh
# xdeep's jobcomp/script (slurm.conf: JobCompType=jobcomp/script,
# JobCompLoc=<this file>). slurmctld runs it as SlurmUser once per finished job
# run: every array task, heterogeneous component and requeued run is its own
# record. It copies slurmctld's record into xdeepd's spool, where the daemon
# charges it; the spool must be writable by SlurmUser and xdeepd only, so no
# user can forge a record. A new file appears whole (written aside, renamed).
spool=/var/spool/xdeep/jobcomp
slurm_conf=
[ -n "$slurm_conf" ] && export SLURM_CONF="$slurm_conf"
umask 022
name="$JOBID.${START:-0}"
tmp="$spool/.$name.$$"
# Fixed keys first, user-chosen text last and on one line each: the daemon
# takes the first occurrence of a key, so a newline in an account name cannot
# forge one. Then slurmctld's record of the job, for the AdminComment
# job_submit.lua set (users cannot change it) and the GPUs the job was
# allocated (JOB_GRES; the jobcomp environment of Slurm 22.05 has no TRES).
# The daemon reads this job's fields and trusts none that user text repeats.
# Text, not JSON: Slurm 22.05's scontrol has no --json, and squeue --json
# ignores -j (it would print every job in slurmctld's memory once per finished
# job). slurmctld runs this for every job: one awk writes both parts (a tr per
# key was two dozen processes, a sed for the prefix one more).
scontrol -d -o show job "$JOBID" 2>/dev/null | awk 'BEGIN {
    n = split("JOBID UID START END NODECNT PARTITION JOBSTATE BATCH ARRAYJOBID ARRAYTASKID " \
              "USERNAME ACCOUNT", keys, " ")
    for (i = 1; i <= n; i++) {
      value = ENVIRON[keys[i]]
      gsub(/[\r\n]/, " ", value)
      print keys[i] "=" value
    }
  }
  { print "SCONTROL=" $0 }' > "$tmp" && mv -f "$tmp" "$spool/$name.job"
