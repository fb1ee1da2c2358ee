"""
Which of the repository's own Python modules a set of entry-point scripts needs.

Starting from the entry points, every `import x` / `from x import y` anywhere
in a file (inside functions too) whose top-level name is a module or package
of src/ pulls that module in, and its own imports in turn. A package is taken
whole (every .py file under it), since packages load some of their files by
path. Standard-library and installed modules are not src/'s and are left out.
"""

import ast
import os


def top_level_imports(path):
    """The top-level module names that the Python file at `path` imports, relative imports excluded."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def module_files(src_dir, name):
    """The .py files of module `name` in src_dir (its file, or every file of its package); [] when none."""
    package = os.path.join(src_dir, name)
    if os.path.isfile(os.path.join(package, "__init__.py")):
        return sorted(os.path.join(folder, file)
                      for folder, subfolders, files in os.walk(package)
                      if "__pycache__" not in folder
                      for file in files if file.endswith(".py"))
    single = package + ".py"
    return [single] if os.path.isfile(single) else []


def needed_modules(src_dir, entry_points):
    """
    The names of src_dir's modules that the entry-point files need, directly
    or through each other, sorted.
    """
    needed, queue = set(), list(entry_points)
    while queue:
        for name in top_level_imports(queue.pop()):
            files = module_files(src_dir, name)
            if files and name not in needed:
                needed.add(name)
                queue.extend(files)
    return sorted(needed)
