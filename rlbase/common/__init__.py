from rlbase.common.package_check import check_not_shadowed as _check_not_shadowed

# Every rlbase submodule imports rlbase.common first: a folder named rlbase that is not the
# package is reported here, before anything reads rlbase.__version__.
_check_not_shadowed()
