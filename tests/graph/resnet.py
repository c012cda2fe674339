"""ResNet-18 in plain PyTorch (no torchvision here), imported into Relax with torch.export."""

from __future__ import annotations

from typing import Any


def resnet18() -> Any:
    """ResNet-18's layers (random weights, eval mode): 8 basic blocks, about 70 operators."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))  # fmt: skip

        def forward(self, x):
            out = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
            return (out + (x if self.down is None else self.down(x))).relu()

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]  # fmt: skip
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers).eval()


def imported_resnet18() -> Any:
    """ResNet-18 as a Relax IRModule (torch.export + from_exported_program), input 1x3x224x224."""
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    example = (torch.randn(1, 3, 224, 224),)
    with torch.no_grad():
        exported = torch.export.export(resnet18(), example)
    return from_exported_program(exported, keep_params_as_input=False)
