"""Cleo's submission (broken): it plots at import, and matplotlib is not
available to the grader, so nothing of it can run."""
import matplotlib.pyplot as plt
import numpy as np

plt.plot(np.arange(3))
plt.show()


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    return 0.0
