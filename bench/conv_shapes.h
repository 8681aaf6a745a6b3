/* bench/conv_shapes.h — the convolution shapes of ResNet-18 (224×224
 * input), each with how many of the network's 20 convolutions have it.
 * bench/gpu_conv.c measures them at batch 8; bench/conv_torch.py lists
 * the same table (keep the two equal: conv_table.py matches by name). */
#ifndef BRAID_BENCH_CONV_SHAPES_H
#define BRAID_BENCH_CONV_SHAPES_H

typedef struct bn_conv_shape {
    const char *name;
    int C, OC, HW, k, stride, pad, count;
} bn_conv_shape;

static const bn_conv_shape bn_resnet18_convs[] = {
    {"conv1_7x7_s2", 3, 64, 224, 7, 2, 3, 1},
    {"l1_3x3_64", 64, 64, 56, 3, 1, 1, 4},
    {"l2_3x3_s2_64_128", 64, 128, 56, 3, 2, 1, 1},
    {"l2_3x3_128", 128, 128, 28, 3, 1, 1, 3},
    {"l2_ds_1x1_s2_64_128", 64, 128, 56, 1, 2, 0, 1},
    {"l3_3x3_s2_128_256", 128, 256, 28, 3, 2, 1, 1},
    {"l3_3x3_256", 256, 256, 14, 3, 1, 1, 3},
    {"l3_ds_1x1_s2_128_256", 128, 256, 28, 1, 2, 0, 1},
    {"l4_3x3_s2_256_512", 256, 512, 14, 3, 2, 1, 1},
    {"l4_3x3_512", 512, 512, 7, 3, 1, 1, 3},
    {"l4_ds_1x1_s2_256_512", 256, 512, 14, 1, 2, 0, 1},
};

#define BN_RESNET18_NCONV                                                      \
    (sizeof bn_resnet18_convs / sizeof bn_resnet18_convs[0])

#endif
