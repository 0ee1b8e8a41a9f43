"""Layers, losses and functional forms (torch.nn's names)."""
from . import functional
from .modules import (AvgPool2d, CrossEntropyLoss, Dropout, Flatten, GELU, LayerNorm, LazyBatchNorm2d,
                      LazyConv2d, LazyLinear, Linear, MaxPool2d, Module, MSELoss, Parameters, ReLU,
                      Sequential)

__all__ = ["functional", "AvgPool2d", "CrossEntropyLoss", "Dropout", "Flatten", "GELU", "LayerNorm",
           "LazyBatchNorm2d", "LazyConv2d", "LazyLinear", "Linear", "MaxPool2d", "Module", "MSELoss",
           "Parameters", "ReLU", "Sequential"]
