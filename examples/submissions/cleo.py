"""Cleo's submission (broken): at import it reads a file of initial
positions that only exists on her laptop, so nothing of it can run."""
import matplotlib.pyplot as plt
import numpy as np

x0 = np.loadtxt("initial_positions.txt")
plt.plot(x0[:, 0], x0[:, 1], "o")
plt.show()


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    return 0.0
