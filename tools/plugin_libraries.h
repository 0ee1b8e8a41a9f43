/* `portable devices`: which file each plugin's dependencies came from. */
#ifndef PT_TOOL_PLUGIN_LIBRARIES_H
#define PT_TOOL_PLUGIN_LIBRARIES_H
void print_plugin_libraries(void);
#endif
