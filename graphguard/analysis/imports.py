"""The reader's imports (:class:`ImportReader`): what each imported name stands for (a TensorFlow API, a
module or name of the checked tree, a configured session factory, or nothing graphguard follows), and
the modules of the checked tree a module may import (its part of the program's import graph). A mixin
of :class:`graphguard.analysis.reader.ModuleReader`; it needs the reader's ``_frame``, ``_frames``,
``_project``, ``_imports``, ``_star_modules``, ``_project_stars`` and ``_session_factories``."""

from __future__ import annotations

import ast

from graphguard.analysis.bindings import OTHER, ProjectRef, Ref, canonical_module


class ImportReader:
    """Import statements and configured session factories (see the module docstring)."""

    def _is_factory(self, ref: Ref) -> bool:
        """Whether ``ref`` is one of the configured ``session-factories`` (dotted names, matched by suffix)."""
        dotted = f"{ref.module}.{ref.name}".strip(".")
        return any(dotted == f or dotted.endswith("." + f) or f.endswith("." + dotted) for f in self._session_factories)

    def _is_project(self, dotted: str) -> bool:
        """Whether an absolute import may name a module of the checked tree (None: anything may)."""
        return self._project is None or dotted in self._project or dotted.split(".")[0] in self._project

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            canonical = canonical_module(alias.name)
            project = canonical is None and self._is_project(alias.name)
            if project:
                self._imports.append(alias.name)
            if alias.asname is not None:
                value = canonical if canonical is not None else ProjectRef(Ref(alias.name, "")) if project else OTHER
                self._frame.scope[alias.asname] = value
            else:
                top = alias.name.split(".")[0]
                self._frame.scope[top] = canonical_module(top) or (ProjectRef(Ref(top, "")) if project else OTHER)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = ("." * node.level) + (node.module or "")
        base = canonical_module(node.module) if node.level == 0 and node.module else None
        if base is None and (node.level or self._is_project(module)):
            # ``from pkg import module`` may import a module: both are candidates (phase 2 finds which exist)
            self._imports.append(module)
            self._imports.extend(f"{module}{'' if module.endswith('.') else '.'}{alias.name}"
                                 for alias in node.names if alias.name != "*")
        for alias in node.names:
            if alias.name == "*":
                if base is not None and len(self._frames) == 1:
                    self._star_modules.insert(0, base)  # ``from keras.models import *``: the last one wins
                elif base is None and len(self._frames) == 1 and (node.level or self._is_project(module)):
                    self._project_stars.insert(0, module)  # ``from a02_zoo import *``: phase 2 resolves names
                continue
            target = alias.asname or alias.name
            if base is not None:
                self._frame.scope[target] = base.attribute(alias.name)
            elif node.level or self._is_project(module):
                # ``from pkg import module`` or ``from module import function``: phase 2 decides which.
                self._frame.scope[target] = ProjectRef(Ref(module, alias.name))
            else:
                # Third-party code (numpy, os): nothing graphguard can follow. A configured session
                # factory may still live there.
                ref = Ref(module, alias.name)
                self._frame.scope[target] = ProjectRef(ref) if self._session_factories and self._is_factory(ref) else OTHER
