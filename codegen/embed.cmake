# codegen/embed.cmake — writes a file's bytes as a C array, so the code
# generator can put graph/rng.c itself into CUDA modules (one source text
# for gcc and NVRTC: bit-identical random numbers on every device).
#   cmake -DINPUT=<file> -DOUTPUT=<file.c> -DSYMBOL=<name> -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# 16 bytes a line keeps the generated file readable by tools
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "/* generated from ${INPUT} by codegen/embed.cmake: do not edit */\n"
  "extern const char ${SYMBOL}[];\n"
  "const char ${SYMBOL}[] = {\n${bytes}0x00};\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different
                "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
