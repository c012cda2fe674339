"""Models written in plain PyTorch (no torchvision here) for the whole-model tests.

ResNet-18 keeps torchvision's layer names (``layer1.0.conv1`` ...), so messages that name a
submodule read as they would for the real one; weights are random.
"""

from __future__ import annotations

from typing import Any


def mlp() -> Any:
    """The book's MLP (784-128-10), random weights, eval mode."""
    from torch import nn

    torch_seed()
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).eval()


def twin_mlp() -> Any:
    """Two dense layers of about equal work (256->256 with ReLU, 256->224): two kernels of about
    equal share, so a small trial budget reaches both whatever shares a machine measures (the
    book's MLP has a second kernel small enough to be left out on a slower machine). Their
    matmuls differ, so each is searched (two of one shape would be epilogue variants, searched
    once)."""
    from torch import nn

    torch_seed()
    return nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 224)).eval()


def encoder_layer() -> Any:
    """``nn.TransformerEncoderLayer`` (d_model 256, 4 heads), batch first, eval mode."""
    from torch import nn

    torch_seed()
    return nn.TransformerEncoderLayer(256, 4, batch_first=True).eval()


def mobilenet_block() -> Any:
    """A MobileNet-style depthwise-separable block: 3x3 depthwise conv (stride 2), batch norm,
    ReLU6, then a 1x1 pointwise conv to twice the channels, batch norm, ReLU6; eval mode."""
    from torch import nn

    torch_seed()
    channels = 32
    return nn.Sequential(
        nn.Conv2d(channels, channels, 3, 2, 1, groups=channels, bias=False),
        nn.BatchNorm2d(channels),
        nn.ReLU6(),
        nn.Conv2d(channels, 2 * channels, 1, bias=False),
        nn.BatchNorm2d(2 * channels),
        nn.ReLU6(),
    ).eval()


def residual_block() -> Any:
    """Two 3x3 convolutions of one shape (16 channels, 16x16 pixels) with different epilogues:
    batch norm + ReLU after the first, batch norm + the residual add after the second (the
    epilogue variants ResNet's blocks have); eval mode."""
    from torch import nn

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(16, 16, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            self.conv2 = nn.Conv2d(16, 16, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(16)

        def forward(self, x):
            y = self.bn1(self.conv1(x)).relu()
            return self.bn2(self.conv2(y)) + x

    torch_seed()
    return Residual().eval()


def resnet18() -> Any:
    """ResNet-18 (random weights, eval mode), torchvision's layout and names."""
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x: Any) -> Any:
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            stages, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                stages.append(
                    nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1))
                )
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = stages
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))

    torch_seed()
    return ResNet18().eval()


def mobilenet_v1(width: float = 1.0) -> Any:
    """MobileNet v1 (depthwise-separable convolutions: 3x3 depthwise, then 1x1), random weights,
    eval mode; ``width`` scales every layer's channels (0.25 makes a small one for tests)."""
    import torch
    from torch import nn

    def conv_bn(cin: int, cout: int, stride: int) -> Any:
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)
        )

    def separable(cin: int, cout: int, stride: int) -> Any:
        return nn.Sequential(
            nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
            nn.BatchNorm2d(cin),
            nn.ReLU(True),
            nn.Conv2d(cin, cout, 1, 1, 0, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(True),
        )

    def ch(n: int) -> int:
        return max(8, int(n * width))

    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)]
    plan += [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    layers, cin = [conv_bn(3, ch(32), 2)], ch(32)
    for cout, stride in plan:
        layers.append(separable(cin, ch(cout), stride))
        cin = ch(cout)
    torch_seed()
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000))
    # Batch-norm statistics of one random batch: with PyTorch's initial ones (mean 0, variance
    # 1) the activations shrink layer by layer to ~1e-11 and every output is the bias.
    for layer in model.modules():
        if isinstance(layer, nn.BatchNorm2d):
            layer.momentum = 1.0
    with torch.no_grad():
        model.train()(torch.randn(2, 3, 64, 64))
    return model.eval()


def imported_resnet18() -> Any:
    """ResNet-18 as a Relax IRModule (torch.export + from_exported_program), input 1x3x224x224."""
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    from mlc_jupyter.models.importer import translate_graph

    example = (torch.randn(1, 3, 224, 224),)
    with torch.no_grad():
        exported = torch.export.export(resnet18(), example)
    # through the package's importer boundary, which hides PyTorch's own deprecation warnings
    return translate_graph(
        exported.graph, lambda: from_exported_program(exported, keep_params_as_input=False)
    )


def torch_seed(seed: int = 0) -> None:
    import torch

    torch.manual_seed(seed)
