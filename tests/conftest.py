import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("NUMBA_NUM_THREADS", "2")
