# rule: SH-PROC-001
# jail: --pids 16 -t 3
# attempts: fork: (retry: )?(Resource temporarily unavailable|Cannot allocate memory)
# Only ever run through the jail: its pid limit and the time limit stop it.
:(){ :|:& };:
# (On a host the orphans go on forking after this shell exits; the jail ends them
# with it, so stay alive a while to let the attempt show: `wait` would return as
# soon as the first child, which only starts more in the background, is done.)
sleep 2
