# EXPECT 100: honest, update driven by an event table (a heap of predicted contacts, invalidated by collision counts)
"""Granular gas with a priority queue of predicted events, as in event-driven molecular dynamics.

Each grain keeps a count of the collisions it took part in; a predicted event
remembers the counts of its grains when it was predicted and is dropped when
popped if either count has changed since (its grains changed velocity).
"""
import heapq
import itertools
import sys

import numpy as np

NO_CONTACT = sys.float_info.max


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    dx, dv = x1 - x2, v1 - v2
    a, b, c = dv @ dv, dx @ dv, dx @ dx - (R1 + R2) ** 2
    if b >= 0 or c < 0:
        return NO_CONTACT
    disc = b * b - a * c
    if disc < 0:
        return NO_CONTACT
    return float(c / (-b + np.sqrt(disc)))


def _unit_normal(wall):
    t = wall[1] - wall[0]
    return np.array([-t[1], t[0]]) / np.linalg.norm(t)


def contact_time_walls(w, x1, v1, R1):
    n = _unit_normal(w)
    h, rate = (x1 - w[0]) @ n, v1 @ n
    if h * rate >= 0 or abs(h) < R1:
        return NO_CONTACT
    return float((abs(h) - R1) / abs(rate))


def minimum_contact_time(x, v, R, w, indexOld):
    old = (int(indexOld[0]), int(indexOld[1]))
    best = (NO_CONTACT, -1, -1)
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if old not in ((i, j), (j, i)):
                best = min(best, (contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j]), i, j))
        for k in range(len(w)):
            if old != (i, -(k + 1)):
                best = min(best, (contact_time_walls(w[k], x[i], v[i], R[i]), i, -(k + 1)))
    if best[0] == NO_CONTACT:
        return NO_CONTACT, np.array([-1, -1])
    return best[0], np.array(best[1:])


def contact_solve_wall(wall, x1, v1, r):
    n = _unit_normal(wall)
    return -(1 + r) * (v1 @ n) * n


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    n = (x1 - x2) / np.linalg.norm(x1 - x2)
    un = (v1 - v2) @ n
    return -(1 + r) * m2 / (m1 + m2) * un * n, (1 + r) * m1 / (m1 + m2) * un * n


class EventTable:
    """Predicted contacts of one update call, earliest first, times counted from the call's start."""

    def __init__(self, x, v, R, w):
        self.x, self.v, self.R, self.w = x, v, R, w
        self.now = 0.0
        self.count = [0] * len(x)
        self.heap = []
        self.order = itertools.count()  # breaks ties without comparing arrays

    def push(self, i, j, tc):
        if tc < NO_CONTACT:
            counts = (self.count[i], self.count[j] if j >= 0 else 0)
            heapq.heappush(self.heap, (self.now + tc, next(self.order), i, j, counts))

    def predict(self, i, skip):
        """Every future contact of grain i, but the contact ``skip`` just solved."""
        x, v, R = self.x, self.v, self.R
        for j in range(len(x)):
            if j != i and skip not in ((i, j), (j, i)):
                self.push(min(i, j), max(i, j), contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j]))
        for k in range(len(self.w)):
            if skip != (i, -(k + 1)):
                self.push(i, -(k + 1), contact_time_walls(self.w[k], x[i], v[i], R[i]))

    def next_valid(self):
        """The earliest event whose grains did not collide since it was predicted, or None."""
        while self.heap:
            te, _, i, j, counts = self.heap[0]
            if counts == (self.count[i], self.count[j] if j >= 0 else 0):
                return te, i, j
            heapq.heappop(self.heap)
        return None


def update(x, v, R, m, w, indexOld, r, dt, t):
    table = EventTable(x, v, R, w)
    last = (int(indexOld[0]), int(indexOld[1]))
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if last not in ((i, j), (j, i)):
                table.push(i, j, contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j]))
        for k in range(len(w)):
            if last != (i, -(k + 1)):
                table.push(i, -(k + 1), contact_time_walls(w[k], x[i], v[i], R[i]))
    while True:
        event = table.next_valid()
        if event is None or event[0] > dt:
            break
        te, i, j = event
        heapq.heappop(table.heap)
        x += v * (te - table.now)
        table.now = te
        if j < 0:
            v[i] += contact_solve_wall(w[-(j + 1)], x[i], v[i], r)
        else:
            dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)
            v[i] += dv1
            v[j] += dv2
            table.count[j] += 1
        table.count[i] += 1
        indexOld[0], indexOld[1] = i, j
        table.predict(i, (i, j))
        if j >= 0:
            table.predict(j, (i, j))
    x += v * (dt - table.now)
    return t + dt
