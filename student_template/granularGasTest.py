"""Animate a granular gas simulated with your granularGas.py.

Examples (from the folder holding granularGas.py):

    python granularGasTest.py                          # one grain in the box
    python granularGasTest.py --scenario head_on
    python granularGasTest.py --scenario gas --grains 80 --r 0.8
    python granularGasTest.py --scenario gas --save gas.gif   # .gif, .mp4 or .html

The grains are coloured by speed; the lower panels show the kinetic energy
and the total momentum. Positions are written every --dt (regular data
writing): between two frames, update() jumps from contact to contact as the
event-driven method does. Without a display, the animation is saved to a file
instead of shown.

With the grader installed (the student kit), this shows the grader's view:
your granularGas.py runs in the grader's sandbox, next to the reference's
gas, with overlapping grains and grains outside the box marked in red
(--simple: the plain view, your file imported directly). The kit holds the
reference's runs of the standard scenarios at their default settings (the
gas: 30 grains, seed 0); with other settings your gas is shown alone.
"""

import argparse
import importlib.util
import os
import sys

import numpy as np


def box(size=1.0):
    """The four walls of the square box [0, size]^2, shape (4, 2, 2)."""
    c = np.array([[0, 0], [size, 0], [size, size], [0, size]], dtype=float)
    return np.stack([c, np.roll(c, -1, axis=0)], axis=1)


def initial_conditions(name, grains=50, seed=1):
    """Return x, v, R, m (shapes (n, 2), (n, 2), (n,), (n,)) for a scenario."""
    if name == "single":
        return np.array([[0.3, 0.6]]), np.array([[0.7, -0.45]]), np.array([0.05]), np.array([1.0])
    if name == "head_on":
        x = np.array([[0.25, 0.5], [0.75, 0.5]])
        v = np.array([[0.5, 0.0], [-0.5, 0.0]])
        return x, v, np.array([0.05, 0.05]), np.array([1.0, 1.0])
    if name == "unequal":
        x = np.array([[0.3, 0.52], [0.7, 0.5]])
        v = np.array([[0.6, 0.0], [-0.1, 0.05]])
        return x, v, np.array([0.04, 0.08]), np.array([1.0, 4.0])
    if name == "gas":
        # Random places, drawn again until no two grains overlap.
        rng = np.random.default_rng(seed)
        radius = np.sqrt(0.15 / (np.pi * grains))
        R = rng.uniform(0.8, 1.2, grains) * radius
        x = np.zeros((grains, 2))
        for i in range(grains):
            for _ in range(10000):
                x[i] = rng.uniform(R[i], 1 - R[i], 2)
                if np.all(np.linalg.norm(x[:i] - x[i], axis=1) > R[:i] + R[i]):
                    break
            else:
                sys.exit(f"could not place {grains} grains without overlap: use fewer grains")
        angle = rng.uniform(0, 2 * np.pi, grains)
        v = np.stack([np.cos(angle), np.sin(angle)], axis=1) * rng.uniform(0.5, 1.0, (grains, 1))
        return x, v, R, (R / radius) ** 2
    sys.exit(f"unknown scenario {name!r}: choose single, head_on, unequal or gas")


def load(path):
    """Import the granularGas.py at path."""
    if not os.path.isfile(path):
        sys.exit(f"no file {path}: pass --impl with the path of your granularGas.py")
    spec = importlib.util.spec_from_file_location("granularGas", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default=os.path.join(here, "granularGas.py"), help="granularGas.py to animate")
    parser.add_argument("--scenario", default="single", choices=["single", "head_on", "unequal", "c12", "dem", "gas"])
    parser.add_argument("--grains", type=int, default=30, help="number of grains of the gas scenario (default 30)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the gas scenario (default 0)")
    parser.add_argument("--r", type=float, help="restitution coefficient in [0, 1] (default: the scenario's)")
    parser.add_argument("--dt", type=float, help="data-writing interval (default: the scenario's)")
    parser.add_argument("--duration", type=float, help="simulated time (default: the scenario's)")
    parser.add_argument("--save", help="write the animation to this .gif, .mp4 or .html file")
    parser.add_argument("--simple", action="store_true", help="plain view, without the grader")
    args = parser.parse_args(argv)
    if args.r is not None and not 0 <= args.r <= 1:
        parser.error(f"--r {args.r}: the restitution coefficient must lie in [0, 1]")
    if (args.dt is not None and args.dt <= 0) or (args.duration is not None and args.duration <= 0):
        parser.error("--dt and --duration must be > 0")

    import matplotlib

    headless = not os.environ.get("DISPLAY") and sys.platform.startswith("linux")
    if args.save or headless:
        matplotlib.use("Agg")
    if not args.simple:
        try:
            from grader.animation import render as grader_view
        except ImportError:
            grader_view = None
        if grader_view is not None:
            return show_grader_view(grader_view, args, headless)
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation
    from matplotlib.collections import EllipseCollection

    if args.scenario in ("c12", "dem"):
        sys.exit(f"--scenario {args.scenario} needs the grader (the student kit); the plain view has single, "
                 "head_on, unequal and gas")
    # The plain view's own defaults.
    args.r = 1.0 if args.r is None else args.r
    args.dt = 0.02 if args.dt is None else args.dt
    args.duration = 4.0 if args.duration is None else args.duration
    gas = load(args.impl)
    x, v, R, m = initial_conditions(args.scenario, args.grains, args.seed)
    w = box()
    index_old = np.array([-1, -1])
    frames = int(round(args.duration / args.dt))
    times, energies = [], []

    fig, (ax, ax_e) = plt.subplots(2, 1, figsize=(5, 7), gridspec_kw={"height_ratios": [3, 1]})
    ax.set_aspect("equal")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    for wall in w:
        ax.plot(wall[:, 0], wall[:, 1], color="black")
    grains = EllipseCollection(2 * R, 2 * R, 0, units="xy", offsets=x, offset_transform=ax.transData, cmap="viridis")
    grains.set_array(np.linalg.norm(v, axis=1))
    grains.set_clim(0, 1.2 * np.max(np.linalg.norm(v, axis=1)))
    ax.add_collection(grains)
    fig.colorbar(grains, ax=ax, label="speed")
    (energy_line,) = ax_e.plot([], [])
    ax_e.set_xlim(0, args.duration)
    ax_e.set_xlabel("time")
    ax_e.set_ylabel("kinetic energy")
    energy0 = 0.5 * np.sum(m * np.sum(v * v, axis=1))
    ax_e.set_ylim(0, 1.1 * energy0 if energy0 > 0 else 1)
    title = ax.set_title("")

    def frame(k):
        if k > 0:
            gas.update(x, v, R, m, w, index_old, args.r, args.dt, (k - 1) * args.dt)
        times.append(k * args.dt)
        energies.append(0.5 * np.sum(m * np.sum(v * v, axis=1)))
        grains.set_offsets(x)
        grains.set_array(np.linalg.norm(v, axis=1))
        energy_line.set_data(times, energies)
        title.set_text(f"t = {k * args.dt:.2f}")
        return grains, energy_line, title

    try:
        animation = FuncAnimation(fig, frame, frames=frames + 1, interval=30, blit=False, repeat=False)
        target = args.save or ("granularGas.gif" if headless else None)
        if target:
            save(animation, target)
            print(f"animation of {frames} frames written to {target}")
        else:
            plt.show()
    except NotImplementedError as exc:
        sys.exit(f"{args.impl}: {exc}. Write that function first.")


def show_grader_view(view, args, headless):
    """The grader's animation: the sandbox, the reference beside, red marks."""
    try:
        scenario = view.scenario(args.scenario, args.grains, args.seed, args.duration, args.r)
        runs = view.simulate(args.impl, scenario if args.dt is None else scenario.with_(dt=args.dt))
    except view.AnimationError as exc:
        sys.exit(str(exc))
    if runs.student.error and len(runs.student.times) == 1:
        sys.exit(f"{args.impl}: your update stopped {runs.student.error}")
    target = args.save or ("granularGas.gif" if headless else None)
    movie = view.build(runs, window=target is None)
    if target:
        try:
            view.save(movie, target)
        except view.AnimationError as exc:
            sys.exit(str(exc))
        print(view.outcome(runs, target))
    else:
        import matplotlib.pyplot as plt

        print(view.outcome(runs, None))
        animation = view.figure.animation(movie)  # kept referenced while the window is open
        plt.show()
        del animation


def save(animation, target):
    """Write the animation; the format follows the file's extension."""
    extension = os.path.splitext(target)[1].lower()
    if extension not in (".gif", ".mp4", ".html"):
        sys.exit(f"cannot save {target!r}: use a .gif, .mp4 or .html file name")
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    if extension == ".gif":
        animation.save(target, writer="pillow", fps=30)
    elif extension == ".mp4":
        from matplotlib.animation import FFMpegWriter

        if not FFMpegWriter.isAvailable():
            sys.exit("saving .mp4 needs ffmpeg, which is not installed: save a .gif or .html instead")
        animation.save(target, writer="ffmpeg", fps=30)
    else:
        with open(target, "w") as f:
            f.write(animation.to_jshtml(fps=30))


if __name__ == "__main__":
    main()
