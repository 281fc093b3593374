"""A supervisor that first writes junk on its channel: the bytes of ``$THIRDSHIFT_JUNK`` (hex).

Then it becomes the real supervisor (``$THIRDSHIFT_REAL_SUPERVISOR``, started by
``$THIRDSHIFT_REAL_LAUNCH``), with the same argv and descriptors, so that the session it was
given runs as usual after the junk. Run like the real one (``python -I -S -c LAUNCH
junk_supervisor.py ARGS...``), for e2e/test_hostile_agent.py.
"""

import os
import sys

CHANNEL_FD = 3

junk = bytes.fromhex(os.environ.get("THIRDSHIFT_JUNK", ""))
view = memoryview(junk)
while view:
    view = view[os.write(CHANNEL_FD, view) :]
real = os.environ["THIRDSHIFT_REAL_SUPERVISOR"]
launch = os.environ["THIRDSHIFT_REAL_LAUNCH"]
os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", launch, real, *sys.argv[2:]])
